//! End-to-end tests: tracer, for real (eBPF uprobes, root), on the fake
//! libcuda in tests/fakecuda/ driven by tests/fakecuda/driver.c.
//!
//! Run with `cargo xtask test` (sets TRACER_ROOT_TESTS=1, runs serially), or
//! `sudo -E TRACER_ROOT_TESTS=1 cargo test -p tracer --test root_uprobes -- --test-threads=1`.
//! Without TRACER_ROOT_TESTS=1 every test prints "skipped" and passes.
mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::BufRead as _;
use std::os::unix::process::CommandExt as _;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::Traced;
use serde_json::{Value, json};
use tracer_common::funcs::{Class, FUNCS, NOISY};

/// Marker in expectations: a hex string other than "0x0".
const NN: &str = "<nonnull>";
/// Marker in expectations: the key must not be there.
const ABSENT: &str = "<absent>";

/// The _ptsz / _ptds variants the fake exports (fakecuda_lib.rs's VARIANTS):
/// tracer probes each beside its table function.
const EXPORTED_VARIANTS: usize = 11;

/// cuStreamSynchronize sleeps this long in the `all` scenario.
const SYNC_US: u64 = 20_000;

// Values the fake library returns (see the table in fakecuda.c).
const D: &str = "0x7f0000000000"; // first cuMemAlloc_v2
const D2: &str = "0x7f0000100000"; // second cuMemAlloc_v2
const DP: &str = "0x7f1000000000"; // cuMemAllocPitch_v2
const DM: &str = "0x7f2000000000"; // cuMemAllocManaged
const DA: &str = "0x7f3000000000"; // cuMemAllocAsync
const DPOOL: &str = "0x7f4000000000"; // cuMemAllocFromPoolAsync
const VA: &str = "0x7f5000000000"; // cuMemAddressReserve
const HP: &str = "0x7e1000000000"; // cuMemAllocHost_v2
const HP2: &str = "0x7e2000000000"; // cuMemHostAlloc
const HOSTBUF: &str = "0x10000000"; // driver.c's fake host buffer
const HOSTREG: &str = "0x11000000";
const IMAGE: &str = "0x20000000";
const F: &str = "0x70009"; // cuKernelGetFunction(cuLibraryGetKernel("my_kernel"))
const KERN: &str = "0x60009"; // cuLibraryGetKernel("my_kernel")
const F2: &str = "0x400c"; // cuModuleGetFunction("other_kernel")
const FLONG: &str = "0x412c"; // cuModuleGetFunction(300 characters)
const MODULE: &str = "0x30001";
const LIB: &str = "0x50001";
const CTX: &str = "0xc2000";
const CTX3: &str = "0xc3000";
const S: &str = "0xb0001";
const S2: &str = "0xb1001";
const E1: &str = "0xee000";
const E2: &str = "0xee002";

fn long_name() -> String {
    let a = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..300).map(|i| a[i % 36] as char).collect()
}

struct Exp {
    name: &'static str,
    /// Subset of the `args` object.
    args: Value,
    /// Subset of the line's top-level fields (ret defaults to 0).
    fields: Value,
}

fn e(name: &'static str, args: Value, fields: Value) -> Exp {
    Exp { name, args, fields }
}

/// The `all` scenario, call by call, in driver.c's order.
fn expected_all() -> Vec<Exp> {
    let long = long_name();
    vec![
        // ---- initialisation and devices
        e("cuInit", json!({"Flags": "0x0"}), json!({"type": "init", "op": "init"})),
        e("cuDriverGetVersion", json!({"driverVersion": 13000}), json!({})),
        e(
            "cuGetExportTable",
            json!({"ppExportTable": "0xe0000000", "pExportTableId": "00010203-0405-0607-0809-0a0b0c0d0e0f"}),
            json!({}),
        ),
        e(
            "cuGetProcAddress_v2",
            json!({"symbol": "cuLaunchKernel", "pfn": NN, "cudaVersion": 12000, "flags": "0x2", "symbolStatus": NN}),
            json!({}),
        ),
        e("cuDeviceGet", json!({"device": 1, "ordinal": 1}), json!({"type": "device"})),
        e("cuDeviceGetCount", json!({"count": 2}), json!({})),
        e("cuDeviceGetName", json!({"name": NN, "len": 64, "dev": 1}), json!({})),
        e("cuDeviceGetUuid_v2", json!({"uuid": NN, "dev": 1}), json!({})),
        e("cuDeviceTotalMem_v2", json!({"bytes": 80u64 << 30, "dev": 1}), json!({})),
        e("cuDeviceGetAttribute", json!({"pi": 161, "attrib": 16, "dev": 1}), json!({})),
        e("cuDeviceGetDefaultMemPool", json!({"pool_out": "0xd001", "dev": 1}), json!({})),
        e("cuDeviceCanAccessPeer", json!({"canAccessPeer": 1, "dev": 0, "peerDev": 1}), json!({})),
        e("cuDevicePrimaryCtxRetain", json!({"pctx": "0xc7001", "dev": 1}), json!({"type": "context"})),
        e("cuDevicePrimaryCtxSetFlags_v2", json!({"dev": 1, "flags": "0x4"}), json!({})),
        e("cuDevicePrimaryCtxGetState", json!({"dev": 1, "flags": 9, "active": 1}), json!({})),
        e("cuDevicePrimaryCtxRelease_v2", json!({"dev": 1}), json!({})),
        e("cuDevicePrimaryCtxReset_v2", json!({"dev": 1}), json!({})),
        // ---- contexts
        e("cuCtxCreate_v2", json!({"pctx": CTX, "flags": "0x1", "dev": 0}), json!({"op": "ctx_create"})),
        e(
            "cuCtxCreate_v3",
            json!({"pctx": CTX3, "paramsArray": "0x0", "numParams": 0, "flags": "0x2", "dev": 0}),
            json!({}),
        ),
        e("cuCtxCreate_v4", json!({"pctx": "0xc4001", "ctxCreateParams": "0x0", "flags": "0x3", "dev": 1}), json!({})),
        e("cuCtxSetCurrent", json!({"ctx": CTX}), json!({})),
        e("cuCtxGetCurrent", json!({"pctx": CTX}), json!({})),
        e("cuCtxPushCurrent_v2", json!({"ctx": CTX3}), json!({})),
        e("cuCtxPopCurrent_v2", json!({"pctx": CTX3}), json!({})),
        e("cuCtxGetDevice", json!({"device": 3}), json!({})),
        e("cuCtxSetLimit", json!({"limit": 1, "value": 1 << 20}), json!({})),
        e("cuCtxGetStreamPriorityRange", json!({"leastPriority": 0, "greatestPriority": -5}), json!({})),
        e("cuCtxSynchronize", json!({}), json!({"type": "sync", "op": "ctx_synchronize"})),
        // ---- modules
        e("cuModuleLoad", json!({"module": MODULE, "fname": "/tmp/fake.cubin"}), json!({"type": "module"})),
        e("cuModuleLoadData", json!({"module": "0x30002", "image": IMAGE}), json!({})),
        e(
            "cuModuleLoadDataEx",
            json!({"module": "0x30003", "image": IMAGE, "numOptions": 0, "options": "0x0", "optionValues": "0x0"}),
            json!({}),
        ),
        e("cuModuleLoadFatBinary", json!({"module": "0x30004", "fatCubin": IMAGE}), json!({})),
        e(
            "cuModuleGetFunction",
            json!({"hfunc": F2, "hmod": MODULE, "name": "other_kernel"}),
            json!({"kernel": "other_kernel", "handle": F2}),
        ),
        e(
            "cuModuleGetFunction",
            json!({"hfunc": FLONG, "hmod": MODULE, "name": long.clone()}),
            json!({"kernel": long, "handle": FLONG}),
        ),
        e(
            "cuModuleGetGlobal_v2",
            json!({"dptr": "0x7e0000000009", "bytes": 256, "hmod": MODULE, "name": "my_global"}),
            json!({}),
        ),
        // ---- libraries and kernels (8 parameters: 2 on the stack)
        e(
            "cuLibraryLoadData",
            json!({"library": LIB, "code": IMAGE, "jitOptions": "0x21000", "jitOptionsValues": "0x22000",
                   "numJitOptions": 3, "libraryOptions": "0x23000", "libraryOptionValues": "0x24000",
                   "numLibraryOptions": 5}),
            json!({}),
        ),
        e(
            "cuLibraryLoadFromFile",
            json!({"library": "0x50002", "fileName": "/tmp/fake.fatbin", "jitOptions": "0x0", "jitOptionsValues": "0x0",
                   "numJitOptions": 0, "libraryOptions": "0x0", "libraryOptionValues": "0x0", "numLibraryOptions": 0}),
            json!({}),
        ),
        e(
            "cuLibraryGetKernel",
            json!({"pKernel": KERN, "library": LIB, "name": "my_kernel"}),
            json!({"kernel": "my_kernel", "handle": KERN}),
        ),
        e("cuKernelGetFunction", json!({"pFunc": F, "kernel": KERN}), json!({"kernel": "my_kernel", "handle": F})),
        e("cuLibraryGetModule", json!({"pMod": "0x30010", "library": LIB}), json!({})),
        e(
            "cuLibraryGetGlobal",
            json!({"dptr": "0x7d000000000a", "bytes": 512, "library": LIB, "name": "lib_global"}),
            json!({}),
        ),
        e("cuKernelGetAttribute", json!({"pi": 100, "attrib": 0, "kernel": KERN, "dev": 0}), json!({})),
        e("cuKernelSetAttribute", json!({"attrib": 8, "val": 65536, "kernel": KERN, "dev": 0}), json!({})),
        e("cuFuncGetAttribute", json!({"pi": 201, "attrib": 1, "hfunc": F}), json!({})),
        e("cuFuncSetAttribute", json!({"hfunc": F, "attrib": 8, "value": 32768}), json!({})),
        e("cuFuncSetCacheConfig", json!({"hfunc": F, "config": 2}), json!({})),
        e("cuFuncGetName", json!({"name": NN, "hfunc": F}), json!({})),
        e(
            "cuOccupancyMaxActiveBlocksPerMultiprocessor",
            json!({"numBlocks": 8, "func": F, "blockSize": 256, "dynamicSMemSize": 1024}),
            json!({}),
        ),
        e(
            "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
            json!({"numBlocks": 4, "func": F, "blockSize": 128, "dynamicSMemSize": 2048, "flags": "0x1"}),
            json!({}),
        ),
        // ---- launches (cuLaunchKernel: 11 parameters, 5 on the stack)
        e(
            "cuLaunchKernel",
            json!({"f": F, "gridDimX": 2, "gridDimY": 3, "gridDimZ": 4, "blockDimX": 128, "blockDimY": 1, "blockDimZ": 1,
                   "sharedMemBytes": 4096, "hStream": "0x5000", "kernelParams": NN, "extra": "0x0"}),
            json!({"type": "kernel", "op": "launch", "kernel": "my_kernel", "func": F, "grid": [2, 3, 4],
                   "block": [128, 1, 1], "shared_mem": 4096, "stream": "0x5000"}),
        ),
        e(
            "cuLaunchKernel",
            json!({"f": F2, "gridDimX": 16, "gridDimY": 1, "gridDimZ": 1, "blockDimX": 256, "blockDimY": 1, "blockDimZ": 1,
                   "sharedMemBytes": 0, "hStream": "0x0", "kernelParams": NN, "extra": "0x0"}),
            json!({"kernel": "other_kernel", "func": F2, "grid": [16, 1, 1], "block": [256, 1, 1], "shared_mem": 0,
                   "stream": "0x0"}),
        ),
        e(
            "cuLaunchKernel_ptsz",
            json!({"f": F, "gridDimX": 5, "gridDimY": 1, "gridDimZ": 1, "blockDimX": 32, "blockDimY": 1, "blockDimZ": 1,
                   "sharedMemBytes": 0, "hStream": "0x5002", "kernelParams": NN, "extra": "0x0"}),
            json!({"type": "kernel", "op": "launch", "kernel": "my_kernel", "grid": [5, 1, 1], "block": [32, 1, 1],
                   "stream": "0x5002"}),
        ),
        e(
            "cuLaunchKernelEx",
            json!({"config": {"gridDim": [7, 8, 9], "blockDim": [32, 2, 1], "sharedMemBytes": 1024, "hStream": "0x6000",
                              "numAttrs": 2, "attrs": [
                                  {"id": 4, "name": "CLUSTER_DIMENSION", "value": [2, 1, 1]},
                                  {"id": 8, "name": "PRIORITY", "value": -3}]},
                   "f": F, "kernelParams": NN, "extra": "0x0"}),
            json!({"type": "kernel", "op": "launch", "kernel": "my_kernel", "func": F, "grid": [7, 8, 9],
                   "block": [32, 2, 1], "shared_mem": 1024, "stream": "0x6000"}),
        ),
        e(
            "cuLaunchKernelEx_ptsz",
            json!({"config": {"gridDim": [1, 1, 1], "blockDim": [1, 1, 1], "sharedMemBytes": 0, "hStream": "0x6001",
                              "numAttrs": 0, "attrs": []},
                   "f": F2, "kernelParams": NN, "extra": "0x0"}),
            json!({"kernel": "other_kernel", "grid": [1, 1, 1], "block": [1, 1, 1], "shared_mem": 0, "stream": "0x6001"}),
        ),
        e(
            "cuLaunchCooperativeKernel",
            json!({"f": F, "gridDimX": 10, "gridDimY": 1, "gridDimZ": 1, "blockDimX": 64, "blockDimY": 1, "blockDimZ": 1,
                   "sharedMemBytes": 512, "hStream": "0x5003", "kernelParams": NN}),
            json!({"type": "kernel", "op": "launch", "kernel": "my_kernel", "grid": [10, 1, 1], "block": [64, 1, 1],
                   "shared_mem": 512, "stream": "0x5003"}),
        ),
        e(
            "cuLaunchHostFunc",
            json!({"hStream": "0x5004", "fn": NN, "userData": "0x32000"}),
            json!({"type": "kernel", "stream": "0x5004"}),
        ),
        // ---- graphs
        e(
            "cuStreamBeginCapture_v2",
            json!({"hStream": "0x5005", "mode": 1}),
            json!({"type": "graph", "stream": "0x5005", "capture": 1}),
        ),
        e("cuStreamIsCapturing", json!({"hStream": "0x5005", "captureStatus": 1}), json!({})),
        e("cuStreamEndCapture", json!({"hStream": "0x5005", "phGraph": "0x90001"}), json!({})),
        e(
            "cuGraphInstantiateWithFlags",
            json!({"phGraphExec": "0x80001", "hGraph": "0x90001", "flags": "0x1"}),
            json!({}),
        ),
        e(
            "cuGraphInstantiateWithParams",
            json!({"phGraphExec": "0x80002", "hGraph": "0x90001", "instantiateParams": NN}),
            json!({}),
        ),
        e("cuGraphUpload", json!({"hGraphExec": "0x80001", "hStream": "0x5005"}), json!({})),
        e(
            "cuGraphLaunch",
            json!({"hGraphExec": "0x80001", "hStream": "0x5005"}),
            json!({"type": "graph", "op": "graph_launch", "graph_exec": "0x80001", "stream": "0x5005"}),
        ),
        e("cuGraphExecDestroy", json!({"hGraphExec": "0x80002"}), json!({})),
        e("cuGraphDestroy", json!({"hGraph": "0x90001"}), json!({})),
        // graph construction (fakecuda/graphs_all.c; handles from fakegraph.c)
        e(
            "cuGraphCreate",
            json!({"phGraph": "0x610000", "flags": "0x0"}),
            json!({"op": "graph_create", "graph": "0x610000"}),
        ),
        e(
            "cuStreamBeginCaptureToGraph",
            json!({"hStream": "0x5007", "hGraph": "0x610000", "dependencies": "0x0", "dependencyData": "0x0",
                   "numDependencies": 0, "mode": 1}),
            json!({"stream": "0x5007", "graph": "0x610000", "capture": 2, "deps": []}),
        ),
        e(
            "cuStreamGetCaptureInfo_v2",
            json!({"hStream": "0x5007", "captureStatus_out": 1, "id_out": "0x7", "graph_out": NN}),
            json!({"stream": "0x5007"}),
        ),
        e(
            "cuStreamGetCaptureInfo_v3",
            json!({"hStream": "0x5007", "captureStatus_out": 1, "id_out": "0x7", "edgeData_out": NN}),
            json!({}),
        ),
        e(
            "cuStreamEndCapture",
            json!({"hStream": "0x5007", "phGraph": "0x90011"}),
            json!({"capture": 2, "graph": "0x90011"}),
        ),
        e("cuThreadExchangeStreamCaptureMode", json!({"mode": NN}), json!({"type": "graph"})),
        e(
            "cuGraphAddKernelNode",
            json!({"phGraphNode": "0xa0000", "hGraph": "0x610000", "dependencies": "0x0", "numDependencies": 0,
                   "nodeParams": {"func": F, "gridDim": [2, 1, 1], "blockDim": [64, 1, 1], "sharedMemBytes": 128,
                                  "kernelParams": NN, "extra": "0x0"}}),
            json!({"op": "graph_add_kernel_node", "node": "0xa0000", "graph": "0x610000", "deps": [], "node_type": "kernel",
                   "kernel": "my_kernel", "func": F, "grid": [2, 1, 1], "block": [64, 1, 1], "shared_mem": 128,
                   "deps_cut": ABSENT}),
        ),
        e(
            "cuGraphAddKernelNode_v2",
            json!({"phGraphNode": "0xa0010", "dependencies": NN, "numDependencies": 1,
                   "nodeParams": {"func": F2, "gridDim": [3, 1, 1], "kern": "0x0"}}),
            json!({"node": "0xa0010", "deps": ["0xa0000"], "node_type": "kernel", "kernel": "other_kernel",
                   "grid": [3, 1, 1], "block": [32, 1, 1], "shared_mem": 0}),
        ),
        e(
            "cuGraphAddMemcpyNode",
            json!({"phGraphNode": "0xa0020", "numDependencies": 1, "ctx": CTX,
                   "copyParams": {"src": HOSTBUF, "dst": D, "WidthInBytes": 256}}),
            json!({"node": "0xa0020", "deps": ["0xa0010"], "node_type": "memcpy", "size": 256, "direction": "h2d",
                   "dst": D, "src": HOSTBUF}),
        ),
        e(
            "cuGraphAddMemsetNode",
            json!({"phGraphNode": "0xa0030", "numDependencies": 0, "ctx": CTX,
                   "memsetParams": {"dst": D, "value": 90, "elementSize": 4, "width": 64, "height": 1}}),
            json!({"node": "0xa0030", "deps": [], "node_type": "memset", "size": 256, "dst": D, "value": 90}),
        ),
        e(
            "cuGraphAddEventRecordNode",
            json!({"phGraphNode": "0xa0040", "event": E1}),
            json!({"node": "0xa0040", "deps": ["0xa0020"], "node_type": "event_record", "event": E1}),
        ),
        e(
            "cuGraphAddEventWaitNode",
            json!({"phGraphNode": "0xa0050", "event": E1}),
            json!({"node": "0xa0050", "deps": [], "node_type": "event_wait", "event": E1}),
        ),
        e("cuGraphCreate", json!({"phGraph": "0x611000"}), json!({"graph": "0x611000"})),
        e(
            "cuGraphAddChildGraphNode",
            json!({"phGraphNode": "0xa0060", "childGraph": "0x611000"}),
            json!({"node": "0xa0060", "node_type": "graph", "child_graph": "0x611000", "deps": []}),
        ),
        e(
            "cuGraphAddEmptyNode",
            json!({"phGraphNode": "0xa0070", "numDependencies": 2}),
            json!({"node": "0xa0070", "node_type": "empty", "deps": ["0xa0030", "0xa0060"]}),
        ),
        e(
            "cuGraphAddNode",
            json!({"phGraphNode": "0xa0080", "nodeParams": {"type": "kernel"}}),
            json!({"node": "0xa0080", "deps": ["0xa0070"], "node_type": "kernel", "kernel": "other_kernel",
                   "grid": [4, 1, 1], "block": [32, 1, 1]}),
        ),
        e(
            "cuGraphAddNode_v2",
            json!({"phGraphNode": "0xa0090", "dependencyData": "0x0", "numDependencies": 1, "nodeParams": {"type": "memset"}}),
            json!({"node": "0xa0090", "deps": ["0xa0070"], "node_type": "memset", "size": 256, "dst": D}),
        ),
        e(
            "cuGraphAddDependencies",
            json!({"hGraph": "0x610000", "from": NN, "to": NN, "numDependencies": 1}),
            json!({"graph": "0x610000", "from": ["0xa0000"], "to": ["0xa0030"]}),
        ),
        e(
            "cuGraphAddDependencies_v2",
            json!({"edgeData": "0x0", "numDependencies": 1}),
            json!({"from": ["0xa0010"], "to": ["0xa0030"]}),
        ),
        e(
            "cuGraphKernelNodeSetParams",
            json!({"hNode": "0xa0000"}),
            json!({"node": "0xa0000", "grid": [2, 1, 1], "kernel": "my_kernel"}),
        ),
        e("cuGraphKernelNodeSetParams_v2", json!({"hNode": "0xa0010"}), json!({"node": "0xa0010", "grid": [3, 1, 1]})),
        e(
            "cuGraphNodeSetParams",
            json!({"hNode": "0xa0080"}),
            json!({"node": "0xa0080", "node_type": "kernel", "grid": [4, 1, 1]}),
        ),
        e("cuGraphClone", json!({"phGraphClone": "0x620000"}), json!({"graph": "0x620000", "original": "0x610000"})),
        e(
            "cuGraphNodeFindInClone",
            json!({"phNode": "0x1a0000", "hOriginalNode": "0xa0000", "hClonedGraph": "0x620000"}),
            json!({"node": "0x1a0000", "original_node": "0xa0000", "graph": "0x620000"}),
        ),
        e(
            "cuGraphInstantiate_v2",
            json!({"phGraphExec": "0x80003", "hGraph": "0x610000", "bufferSize": 0}),
            json!({"graph_exec": "0x80003", "graph": "0x610000"}),
        ),
        e(
            "cuGraphExecKernelNodeSetParams",
            json!({"hGraphExec": "0x80003", "hNode": "0xa0000"}),
            json!({"graph_exec": "0x80003", "node": "0xa0000", "grid": [2, 1, 1]}),
        ),
        e(
            "cuGraphExecKernelNodeSetParams_v2",
            json!({"hNode": "0xa0010"}),
            json!({"graph_exec": "0x80003", "node": "0xa0010", "kernel": "other_kernel"}),
        ),
        e("cuGraphExecNodeSetParams", json!({"hNode": "0xa0080"}), json!({"node": "0xa0080", "grid": [4, 1, 1]})),
        e(
            "cuGraphExecUpdate_v2",
            json!({"hGraphExec": "0x80003", "hGraph": "0x620000"}),
            json!({"graph_exec": "0x80003", "graph": "0x620000"}),
        ),
        e("cuGraphDestroyNode", json!({"hNode": "0xa0090"}), json!({"node": "0xa0090"})),
        // ---- allocation
        e(
            "cuMemAlloc_v2",
            json!({"dptr": D, "bytesize": 1 << 20}),
            json!({"type": "memory", "op": "alloc", "size": 1 << 20, "ptr": D}),
        ),
        e("cuMemAlloc_v2", json!({"dptr": D2, "bytesize": 1 << 20}), json!({"size": 1 << 20, "ptr": D2})),
        // out-parameter of the failed call: see failed_call_reports_no_out_value
        e(
            "cuMemAlloc_v2",
            json!({"bytesize": 2u64 << 40}),
            json!({"ret": 2, "error": "CUDA_ERROR_OUT_OF_MEMORY", "size": 2u64 << 40}),
        ),
        e(
            "cuMemAllocPitch_v2",
            json!({"dptr": DP, "pPitch": 1024, "WidthInBytes": 1000, "Height": 64, "ElementSizeBytes": 4}),
            json!({"op": "alloc", "size": 65536, "ptr": DP}),
        ),
        e("cuMemAllocManaged", json!({"dptr": DM, "bytesize": 4096, "flags": "0x1"}), json!({"size": 4096, "ptr": DM})),
        e(
            "cuMemAllocAsync",
            json!({"dptr": DA, "bytesize": 8192, "hStream": "0x5006"}),
            json!({"size": 8192, "ptr": DA, "stream": "0x5006"}),
        ),
        e(
            "cuMemAllocFromPoolAsync",
            json!({"dptr": DPOOL, "bytesize": 16384, "pool": "0xd001", "hStream": "0x5006"}),
            json!({"size": 16384, "ptr": DPOOL, "stream": "0x5006"}),
        ),
        e("cuMemAllocHost_v2", json!({"pp": HP, "bytesize": 4096}), json!({"op": "alloc", "size": 4096, "ptr": HP})),
        e("cuMemHostAlloc", json!({"pp": HP2, "bytesize": 8192, "Flags": "0x2"}), json!({"size": 8192, "ptr": HP2})),
        e(
            "cuMemHostRegister_v2",
            json!({"p": HOSTREG, "bytesize": 65536, "Flags": "0x1"}),
            json!({"op": "alloc", "size": 65536, "ptr": HOSTREG}),
        ),
        e(
            "cuMemCreate",
            json!({"handle": "0xa0001", "size": 2 << 20,
                   "prop": {"type": 1, "requestedHandleTypes": 1, "location": {"type": 1, "id": 1}, "allocFlags": "0x100"},
                   "flags": "0x0"}),
            json!({"op": "alloc", "size": 2 << 20, "handle": "0xa0001"}),
        ),
        e(
            "cuMemAddressReserve",
            json!({"ptr": VA, "size": 4 << 20, "alignment": 2 << 20, "addr": "0x0", "flags": "0x0"}),
            json!({"op": "alloc", "size": 4 << 20, "ptr": VA}),
        ),
        e(
            "cuMemMap",
            json!({"ptr": VA, "size": 2 << 20, "offset": 0, "handle": "0xa0001", "flags": "0x0"}),
            json!({"type": "memory", "op": "mem_map"}),
        ),
        e(
            "cuMemSetAccess",
            json!({"ptr": VA, "size": 2 << 20, "desc": {"location": {"type": 1, "id": 1}, "flags": 3}, "count": 1}),
            json!({}),
        ),
        e("cuMemGetInfo_v2", json!({"free": 70u64 << 30, "total": 80u64 << 30}), json!({})),
        e("cuMemGetAddressRange_v2", json!({"pbase": D, "psize": 1 << 20, "dptr": "0x7f0000001234"}), json!({})),
        e("cuMemHostGetDevicePointer_v2", json!({"pdptr": HP, "p": HP, "Flags": "0x0"}), json!({})),
        e("cuPointerGetAttribute", json!({"data": NN, "attribute": 2, "ptr": D}), json!({})),
        e("cuPointerGetAttributes", json!({"numAttributes": 2, "attributes": NN, "data": NN, "ptr": D}), json!({})),
        e(
            "cuMemPrefetchAsync",
            json!({"devPtr": DM, "count": 4096, "dstDevice": 0, "hStream": "0x5006"}),
            json!({"stream": "0x5006"}),
        ),
        // ---- copies
        e(
            "cuMemcpyHtoD_v2",
            json!({"dstDevice": D, "srcHost": HOSTBUF, "ByteCount": 4096}),
            json!({"type": "memcpy", "op": "copy", "size": 4096, "direction": "h2d", "dst": D, "src": HOSTBUF}),
        ),
        e(
            "cuMemcpyHtoD_v2_ptds",
            json!({"dstDevice": D, "srcHost": HOSTBUF, "ByteCount": 128}),
            json!({"size": 128, "direction": "h2d", "dst": D, "src": HOSTBUF}),
        ),
        e(
            "cuMemcpyDtoH_v2",
            json!({"dstHost": HOSTBUF, "srcDevice": D, "ByteCount": 2048}),
            json!({"size": 2048, "direction": "d2h", "dst": HOSTBUF, "src": D}),
        ),
        e(
            "cuMemcpyDtoD_v2",
            json!({"dstDevice": D2, "srcDevice": D, "ByteCount": 1024}),
            json!({"size": 1024, "direction": "d2d", "dst": D2, "src": D}),
        ),
        e(
            "cuMemcpyHtoDAsync_v2",
            json!({"dstDevice": D, "srcHost": HOSTBUF, "ByteCount": 512, "hStream": "0x7000"}),
            json!({"size": 512, "direction": "h2d", "stream": "0x7000"}),
        ),
        e(
            "cuMemcpyHtoDAsync_v2_ptsz",
            json!({"dstDevice": D, "srcHost": HOSTBUF, "ByteCount": 256, "hStream": "0x7001"}),
            json!({"size": 256, "direction": "h2d", "stream": "0x7001"}),
        ),
        e(
            "cuMemcpyDtoHAsync_v2",
            json!({"dstHost": HOSTBUF, "srcDevice": D, "ByteCount": 8192, "hStream": "0x7000"}),
            json!({"size": 8192, "direction": "d2h", "dst": HOSTBUF, "src": D, "stream": "0x7000"}),
        ),
        e(
            "cuMemcpyDtoDAsync_v2",
            json!({"dstDevice": D2, "srcDevice": D, "ByteCount": 64, "hStream": "0x7000"}),
            json!({"size": 64, "direction": "d2d", "stream": "0x7000"}),
        ),
        // unified addressing: direction from the ranges tracer saw allocated
        e(
            "cuMemcpy",
            json!({"dst": D, "src": HOSTBUF, "ByteCount": 100}),
            json!({"size": 100, "direction": "h2d", "dst": D, "src": HOSTBUF}),
        ),
        e(
            "cuMemcpy_ptds",
            json!({"dst": HOSTBUF, "src": D2, "ByteCount": 200}),
            json!({"size": 200, "direction": "d2h"}),
        ),
        e("cuMemcpy", json!({"dst": D2, "src": D, "ByteCount": 300}), json!({"size": 300, "direction": "d2d"})),
        e("cuMemcpy", json!({"dst": HP, "src": D, "ByteCount": 400}), json!({"size": 400, "direction": "d2h"})),
        e(
            "cuMemcpyAsync",
            json!({"dst": D, "src": HP, "ByteCount": 500, "hStream": "0x7002"}),
            json!({"size": 500, "direction": "h2d", "stream": "0x7002"}),
        ),
        e(
            "cuMemcpyAsync_ptsz",
            json!({"dst": D2, "src": D, "ByteCount": 600, "hStream": "0x7003"}),
            json!({"size": 600, "direction": "d2d", "stream": "0x7003"}),
        ),
        e(
            "cuMemcpyPeer",
            json!({"dstDevice": D2, "dstContext": CTX, "srcDevice": D, "srcContext": CTX3, "ByteCount": 700}),
            json!({"size": 700, "direction": "peer", "dst": D2, "src": D}),
        ),
        e(
            "cuMemcpyPeerAsync",
            json!({"dstDevice": D2, "dstContext": CTX, "srcDevice": D, "srcContext": CTX3, "ByteCount": 800,
                   "hStream": "0x7004"}),
            json!({"size": 800, "direction": "peer", "stream": "0x7004"}),
        ),
        e(
            "cuMemcpy2D_v2",
            json!({"pCopy": {"srcMemoryType": "host", "src": HOSTBUF, "dstMemoryType": "device", "dst": D,
                             "WidthInBytes": 256, "Height": 4, "Depth": 1}}),
            json!({"type": "memcpy", "op": "copy", "size": 1024, "direction": "h2d", "dst": D, "src": HOSTBUF}),
        ),
        e(
            "cuMemcpy2DUnaligned_v2",
            json!({"pCopy": {"srcMemoryType": "device", "src": D2, "dstMemoryType": "host", "dst": HOSTBUF,
                             "WidthInBytes": 128, "Height": 8}}),
            json!({"size": 1024, "direction": "d2h", "dst": HOSTBUF, "src": D2}),
        ),
        e(
            "cuMemcpy2DAsync_v2",
            json!({"pCopy": {"srcMemoryType": "device", "src": D, "dstMemoryType": "device", "dst": D2,
                             "WidthInBytes": 64, "Height": 2}, "hStream": "0x7005"}),
            json!({"size": 128, "direction": "d2d", "stream": "0x7005"}),
        ),
        e(
            "cuMemcpy3D_v2",
            json!({"pCopy": {"srcMemoryType": "host", "src": HOSTBUF, "dstMemoryType": "device", "dst": D,
                             "WidthInBytes": 64, "Height": 4, "Depth": 2}}),
            json!({"size": 512, "direction": "h2d", "dst": D, "src": HOSTBUF}),
        ),
        e(
            "cuMemcpy3DAsync_v2",
            json!({"pCopy": {"srcMemoryType": "device", "src": D2, "dstMemoryType": "host", "dst": HOSTBUF,
                             "WidthInBytes": 32, "Height": 2, "Depth": 3}, "hStream": "0x7006"}),
            json!({"size": 192, "direction": "d2h", "stream": "0x7006"}),
        ),
        // ---- sets
        e(
            "cuMemsetD8_v2",
            json!({"dstDevice": D, "uc": 0xab, "N": 100}),
            json!({"type": "memset", "op": "set", "size": 100, "dst": D}),
        ),
        e("cuMemsetD16_v2", json!({"dstDevice": D, "us": 0xbeef, "N": 50}), json!({"size": 100})),
        e("cuMemsetD32_v2", json!({"dstDevice": D, "ui": 0xdeadbeefu32, "N": 25}), json!({"size": 100})),
        e("cuMemsetD8Async", json!({"uc": 1, "N": 10, "hStream": "0x7007"}), json!({"size": 10, "stream": "0x7007"})),
        e("cuMemsetD16Async", json!({"us": 2, "N": 10, "hStream": "0x7007"}), json!({"size": 20, "stream": "0x7007"})),
        e(
            "cuMemsetD32Async",
            json!({"dstDevice": D, "ui": 7, "N": 10, "hStream": "0x7007"}),
            json!({"size": 40, "dst": D, "stream": "0x7007"}),
        ),
        e(
            "cuMemsetD2D8_v2",
            json!({"dstDevice": D, "dstPitch": 512, "uc": 0x11, "Width": 100, "Height": 4}),
            json!({"size": 400, "dst": D}),
        ),
        e("cuMemsetD2D16_v2", json!({"dstPitch": 512, "us": 0x2222, "Width": 100, "Height": 4}), json!({"size": 800})),
        e(
            "cuMemsetD2D32_v2",
            json!({"dstPitch": 512, "ui": 0x33333333, "Width": 100, "Height": 4}),
            json!({"size": 1600}),
        ),
        e(
            "cuMemsetD2D8Async",
            json!({"dstPitch": 256, "uc": 0x44, "Width": 10, "Height": 2, "hStream": "0x7008"}),
            json!({"size": 20, "stream": "0x7008"}),
        ),
        e(
            "cuMemsetD2D16Async",
            json!({"dstPitch": 256, "us": 0x55, "Width": 10, "Height": 2, "hStream": "0x7008"}),
            json!({"size": 40, "stream": "0x7008"}),
        ),
        e(
            "cuMemsetD2D32Async",
            json!({"dstPitch": 256, "ui": 0x66, "Width": 10, "Height": 2, "hStream": "0x7008"}),
            json!({"size": 80, "stream": "0x7008"}),
        ),
        // ---- streams, events, synchronisation
        e("cuStreamCreate", json!({"phStream": S, "Flags": "0x1"}), json!({"type": "stream", "op": "stream_create"})),
        e("cuStreamCreateWithPriority", json!({"phStream": S2, "flags": "0x1", "priority": -2}), json!({})),
        e("cuEventCreate", json!({"phEvent": E1, "Flags": "0x0"}), json!({"type": "event", "op": "event_create"})),
        e("cuEventCreate", json!({"phEvent": E2, "Flags": "0x2"}), json!({})),
        e("cuEventRecord", json!({"hEvent": E1, "hStream": S}), json!({"event": E1, "stream": S})),
        e("cuEventRecord_ptsz", json!({"hEvent": E1, "hStream": S2}), json!({"event": E1, "stream": S2})),
        e(
            "cuEventRecordWithFlags",
            json!({"hEvent": E2, "hStream": S, "flags": "0x1"}),
            json!({"event": E2, "stream": S}),
        ),
        e(
            "cuStreamWaitEvent",
            json!({"hStream": S2, "hEvent": E2, "Flags": "0x0"}),
            json!({"type": "sync", "event": E2, "stream": S2}),
        ),
        e("cuStreamQuery", json!({"hStream": S}), json!({"stream": S})),
        e("cuStreamQuery", json!({"hStream": "0xbad"}), json!({"ret": 600, "error": "CUDA_ERROR_NOT_READY"})),
        e(
            "cuStreamSynchronize",
            json!({"hStream": S}),
            json!({"type": "sync", "op": "stream_synchronize", "stream": S}),
        ),
        e(
            "cuStreamSynchronize_ptsz",
            json!({"hStream": S2}),
            json!({"type": "sync", "op": "stream_synchronize", "stream": S2}),
        ),
        e("cuEventQuery", json!({"hEvent": E2}), json!({"type": "sync", "event": E2})),
        e("cuEventSynchronize", json!({"hEvent": E2}), json!({"event": E2})),
        e("cuEventElapsedTime", json!({"pMilliseconds": 1.5, "hStart": E1, "hEnd": E2}), json!({})),
        e("cuEventElapsedTime_v2", json!({"pMilliseconds": 2.25, "hStart": E1, "hEnd": E2}), json!({})),
        e("cuEventDestroy_v2", json!({"hEvent": E1}), json!({"event": E1})),
        e("cuEventDestroy_v2", json!({"hEvent": E2}), json!({"event": E2})),
        e("cuStreamDestroy_v2", json!({"hStream": S}), json!({"stream": S})),
        e("cuStreamDestroy_v2", json!({"hStream": S2}), json!({"stream": S2})),
        // ---- teardown
        e("cuMemUnmap", json!({"ptr": VA, "size": 2 << 20}), json!({})),
        e("cuMemRelease", json!({"handle": "0xa0001"}), json!({"type": "memory", "op": "free", "ptr": ABSENT})),
        e("cuMemAddressFree", json!({"ptr": VA, "size": 4 << 20}), json!({"op": "free", "ptr": VA})),
        e(
            "cuMemFreeAsync",
            json!({"dptr": DA, "hStream": "0x5006"}),
            json!({"op": "free", "ptr": DA, "stream": "0x5006"}),
        ),
        e("cuMemFree_v2", json!({"dptr": D2}), json!({"type": "memory", "op": "free", "ptr": D2})),
        e("cuMemFree_v2", json!({"dptr": D}), json!({"ptr": D})),
        e("cuMemFree_v2", json!({"dptr": DP}), json!({"ptr": DP})),
        e("cuMemFreeHost", json!({"p": HP}), json!({"op": "free", "ptr": HP})),
        e("cuMemFreeHost", json!({"p": HP2}), json!({"ptr": HP2})),
        e("cuMemHostUnregister", json!({"p": HOSTREG}), json!({"op": "free", "ptr": HOSTREG})),
        e("cuModuleUnload", json!({"hmod": "0x30002"}), json!({})),
        e("cuLibraryUnload", json!({"library": "0x50002"}), json!({})),
        e("cuCtxDestroy_v2", json!({"ctx": "0xc4001"}), json!({})),
        // ---- versioned entry points and work/wait functions (fakeversioned.c), in table order
        e(
            "cuGetProcAddress",
            json!({"symbol": "cuCtxSynchronize", "pfn": NN, "cudaVersion": 13000, "flags": "0x0"}),
            json!({"type": "init", "op": "get_proc_address"}),
        ),
        e("cuCtxSynchronize_v2", json!({"ctx": CTX}), json!({"type": "sync", "op": "ctx_synchronize"})),
        e("cuCtxGetDevice_v2", json!({"device": 2, "ctx": CTX}), json!({"type": "context", "op": "ctx_get_device"})),
        e("cuDeviceGetUuid", json!({"uuid": NN, "dev": 1}), json!({"type": "device", "op": "device_get_uuid"})),
        e(
            "cuGraphExecUpdate",
            json!({"hGraphExec": "0x80003", "hGraph": "0x620000", "hErrorNode_out": NN, "updateResult_out": NN}),
            json!({"type": "graph", "op": "graph_exec_update", "graph_exec": "0x80003", "graph": "0x620000"}),
        ),
        e(
            "cuStreamGetCaptureInfo",
            json!({"hStream": "0x5008", "captureStatus_out": 1, "id_out": "0x108"}),
            json!({"type": "graph", "op": "stream_get_capture_info", "stream": "0x5008"}),
        ),
        e(
            "cuStreamGetCaptureInfo_ptsz",
            json!({"hStream": "0x5009", "captureStatus_out": 1, "id_out": "0x109"}),
            json!({"type": "graph", "op": "stream_get_capture_info", "stream": "0x5009"}),
        ),
        e(
            "cuStreamUpdateCaptureDependencies",
            json!({"hStream": "0x5008", "dependencies": NN, "numDependencies": 2, "flags": "0x1"}),
            json!({"type": "graph", "op": "stream_update_capture_dependencies", "stream": "0x5008"}),
        ),
        e(
            "cuStreamUpdateCaptureDependencies_v2",
            json!({"hStream": "0x5009", "dependencies": NN, "dependencyData": "0x0", "numDependencies": 1,
                   "flags": "0x0"}),
            json!({"op": "stream_update_capture_dependencies", "stream": "0x5009"}),
        ),
        e(
            "cuGraphGetEdges",
            json!({"hGraph": "0x610000", "from": "0x0", "to": "0x0", "numEdges": NN}),
            json!({"type": "graph", "op": "graph_get_edges"}),
        ),
        e(
            "cuGraphGetEdges_v2",
            json!({"hGraph": "0x610000", "from": NN, "to": NN, "edgeData": "0x0", "numEdges": NN}),
            json!({"op": "graph_get_edges"}),
        ),
        e(
            "cuMemPrefetchAsync_v2",
            json!({"devPtr": DM, "count": 4096, "location": {"type": 1, "id": 1}, "flags": "0x0", "hStream": "0x8001"}),
            json!({"type": "memory", "op": "mem_prefetch_async", "stream": "0x8001"}),
        ),
        e(
            "cuMemPrefetchAsync_v2_ptsz",
            json!({"devPtr": DM, "count": 2048, "location": {"type": 3, "id": 1}, "flags": "0x0", "hStream": "0x8002"}),
            json!({"type": "memory", "op": "mem_prefetch_async", "stream": "0x8002"}),
        ),
        e(
            "cuMemAdvise",
            json!({"devPtr": DM, "count": 4096, "advice": 3, "device": 1}),
            json!({"type": "memory", "op": "mem_advise"}),
        ),
        e(
            "cuMemAdvise_v2",
            json!({"devPtr": DM, "count": 2048, "advice": 5, "location": {"type": 1, "id": 0}}),
            json!({"type": "memory", "op": "mem_advise"}),
        ),
        e(
            "cuMemPrefetchBatchAsync",
            json!({"dptrs": NN, "sizes": NN, "count": 2, "prefetchLocs": NN, "prefetchLocIdxs": NN,
                   "numPrefetchLocs": 1, "flags": "0x0", "hStream": "0x8003"}),
            json!({"type": "memory", "op": "mem_prefetch_batch_async", "stream": "0x8003"}),
        ),
        e(
            "cuMemDiscardBatchAsync",
            json!({"dptrs": NN, "sizes": NN, "count": 2, "flags": "0x0", "hStream": "0x8004"}),
            json!({"type": "memory", "op": "mem_discard_batch_async", "stream": "0x8004"}),
        ),
        e(
            "cuMemDiscardAndPrefetchBatchAsync",
            json!({"dptrs": NN, "sizes": NN, "count": 2, "prefetchLocs": NN, "prefetchLocIdxs": NN,
                   "numPrefetchLocs": 1, "flags": "0x0", "hStream": "0x8005"}),
            json!({"type": "memory", "op": "mem_discard_and_prefetch_batch_async", "stream": "0x8005"}),
        ),
        // batches: one direction per copy ("batch")
        e(
            "cuMemcpyBatchAsync",
            json!({"dsts": NN, "srcs": NN, "sizes": NN, "count": 2, "attrs": "0x12000000", "attrsIdxs": NN,
                   "numAttrs": 1, "failIdx": NN, "hStream": "0x8006"}),
            json!({"type": "memcpy", "op": "copy", "direction": "batch", "stream": "0x8006", "copies": 2, "size": 3072, "sizes": [2048, 1024]}),
        ),
        e(
            "cuMemcpyBatchAsync_v2",
            json!({"dsts": NN, "srcs": NN, "sizes": NN, "count": 2, "attrs": "0x12000000", "attrsIdxs": NN,
                   "numAttrs": 1, "hStream": "0x8007"}),
            json!({"type": "memcpy", "op": "copy", "direction": "batch", "stream": "0x8007", "copies": 2, "size": 3072, "sizes": [2048, 1024]}),
        ),
        e(
            "cuMemcpyBatchAsync_v2_ptsz",
            json!({"dsts": NN, "srcs": NN, "sizes": NN, "count": 1, "attrs": "0x12000000", "attrsIdxs": NN,
                   "numAttrs": 1, "hStream": "0x8008"}),
            json!({"type": "memcpy", "op": "copy", "direction": "batch", "stream": "0x8008", "copies": 1, "size": 2048, "sizes": [2048]}),
        ),
        e(
            "cuMemcpy3DBatchAsync",
            json!({"numOps": 2, "opList": "0x12100000", "failIdx": NN, "flags": "0x0", "hStream": "0x8009"}),
            json!({"type": "memcpy", "op": "copy", "direction": "batch", "stream": "0x8009"}),
        ),
        e(
            "cuMemcpy3DBatchAsync_v2",
            json!({"numOps": 1, "opList": "0x12100000", "flags": "0x0", "hStream": "0x800a"}),
            json!({"type": "memcpy", "op": "copy", "direction": "batch", "stream": "0x800a"}),
        ),
        e(
            "cuMemcpy3DPeer",
            json!({"pCopy": "0x12200000"}),
            json!({"type": "memcpy", "op": "copy", "direction": "peer"}),
        ),
        e(
            "cuMemcpy3DPeerAsync",
            json!({"pCopy": "0x12200000", "hStream": "0x800b"}),
            json!({"type": "memcpy", "op": "copy", "direction": "peer", "stream": "0x800b"}),
        ),
        // CUDA arrays are device memory
        e(
            "cuMemcpyHtoA_v2",
            json!({"dstArray": "0x13000", "dstOffset": 16, "srcHost": HOSTBUF, "ByteCount": 4096}),
            json!({"type": "memcpy", "op": "copy", "size": 4096, "direction": "h2d", "dst": "0x13000", "src": HOSTBUF}),
        ),
        e(
            "cuMemcpyAtoH_v2",
            json!({"dstHost": HOSTBUF, "srcArray": "0x13000", "srcOffset": 32, "ByteCount": 2048}),
            json!({"size": 2048, "direction": "d2h", "dst": HOSTBUF, "src": "0x13000"}),
        ),
        e(
            "cuMemcpyDtoA_v2",
            json!({"dstArray": "0x13100", "dstOffset": 64, "srcDevice": DM, "ByteCount": 1024}),
            json!({"size": 1024, "direction": "d2d", "dst": "0x13100", "src": DM}),
        ),
        e(
            "cuMemcpyAtoD_v2",
            json!({"dstDevice": DM, "srcArray": "0x13100", "srcOffset": 128, "ByteCount": 512}),
            json!({"size": 512, "direction": "d2d", "dst": DM, "src": "0x13100"}),
        ),
        e(
            "cuMemcpyAtoA_v2",
            json!({"dstArray": "0x13100", "dstOffset": 256, "srcArray": "0x13000", "srcOffset": 8, "ByteCount": 128}),
            json!({"size": 128, "direction": "d2d", "dst": "0x13100", "src": "0x13000"}),
        ),
        e(
            "cuMemcpyHtoAAsync_v2",
            json!({"dstArray": "0x13000", "dstOffset": 0, "srcHost": HOSTBUF, "ByteCount": 64, "hStream": "0x800c"}),
            json!({"size": 64, "direction": "h2d", "dst": "0x13000", "src": HOSTBUF, "stream": "0x800c"}),
        ),
        e(
            "cuMemcpyAtoHAsync_v2",
            json!({"dstHost": HOSTBUF, "srcArray": "0x13000", "srcOffset": 4, "ByteCount": 32, "hStream": "0x800c"}),
            json!({"size": 32, "direction": "d2h", "dst": HOSTBUF, "src": "0x13000", "stream": "0x800c"}),
        ),
        // stream memory operations (on stream 0x800d, at the managed allocation)
        e(
            "cuStreamWaitValue32",
            json!({"stream": "0x800d", "addr": DM, "value": 0x11, "flags": "0x1"}),
            json!({"type": "stream", "op": "stream_wait_value32"}),
        ),
        e(
            "cuStreamWaitValue32_v2",
            json!({"stream": "0x800d", "addr": "0x7f2000000004", "value": 0x22, "flags": "0x2"}),
            json!({"type": "stream", "op": "stream_wait_value32"}),
        ),
        e(
            "cuStreamWaitValue64",
            json!({"stream": "0x800d", "addr": "0x7f2000000008", "value": 0x3300000000u64, "flags": "0x1"}),
            json!({"type": "stream", "op": "stream_wait_value64"}),
        ),
        e(
            "cuStreamWaitValue64_v2",
            json!({"stream": "0x800d", "addr": "0x7f2000000010", "value": 0x44, "flags": "0x0"}),
            json!({"type": "stream", "op": "stream_wait_value64"}),
        ),
        e(
            "cuStreamWriteValue32",
            json!({"stream": "0x800d", "addr": "0x7f2000000018", "value": 0x55, "flags": "0x0"}),
            json!({"type": "stream", "op": "stream_write_value32"}),
        ),
        e(
            "cuStreamWriteValue32_v2",
            json!({"stream": "0x800d", "addr": "0x7f200000001c", "value": 0x66, "flags": "0x1"}),
            json!({"type": "stream", "op": "stream_write_value32"}),
        ),
        e(
            "cuStreamWriteValue64",
            json!({"stream": "0x800d", "addr": "0x7f2000000020", "value": 0x7700000000u64, "flags": "0x0"}),
            json!({"type": "stream", "op": "stream_write_value64"}),
        ),
        e(
            "cuStreamWriteValue64_v2",
            json!({"stream": "0x800d", "addr": "0x7f2000000028", "value": 0x88, "flags": "0x1"}),
            json!({"type": "stream", "op": "stream_write_value64"}),
        ),
        e(
            "cuStreamBatchMemOp",
            json!({"stream": "0x800d", "count": 2, "paramArray": "0x12300000", "flags": "0x0"}),
            json!({"type": "stream", "op": "stream_batch_mem_op"}),
        ),
        e(
            "cuStreamBatchMemOp_v2",
            json!({"stream": "0x800d", "count": 3, "paramArray": "0x12300000", "flags": "0x0"}),
            json!({"type": "stream", "op": "stream_batch_mem_op"}),
        ),
        e(
            "cuStreamAddCallback",
            json!({"hStream": "0x800e", "callback": NN, "userData": "0x32001", "flags": "0x0"}),
            json!({"type": "stream", "op": "stream_add_callback", "stream": "0x800e"}),
        ),
        e(
            "cuCtxRecordEvent",
            json!({"hCtx": CTX, "hEvent": "0xee004"}),
            json!({"type": "event", "op": "ctx_record_event", "event": "0xee004"}),
        ),
        e(
            "cuCtxWaitEvent",
            json!({"hCtx": CTX3, "hEvent": "0xee004"}),
            json!({"type": "event", "op": "ctx_wait_event", "event": "0xee004"}),
        ),
        // the 64-byte handle goes on the stack: Flags is the second register
        e(
            "cuIpcOpenMemHandle",
            json!({"pdptr": "0x7f6000500000", "Flags": "0x1"}),
            json!({"type": "memory", "op": "ipc_open_mem_handle"}),
        ),
        e(
            "cuIpcOpenMemHandle_v2",
            json!({"pdptr": "0x7f7000600000", "Flags": "0x1"}),
            json!({"type": "memory", "op": "ipc_open_mem_handle"}),
        ),
        e(
            "cuIpcGetMemHandle",
            json!({"pHandle": NN, "dptr": DM}),
            json!({"type": "memory", "op": "ipc_get_mem_handle"}),
        ),
        e(
            "cuIpcCloseMemHandle",
            json!({"dptr": "0x7f6000500000"}),
            json!({"type": "memory", "op": "ipc_close_mem_handle"}),
        ),
        // first versions still handed out for old CUDA versions
        e(
            "cuDevicePrimaryCtxRelease",
            json!({"dev": 1}),
            json!({"type": "context", "op": "device_primary_ctx_release"}),
        ),
        e("cuDevicePrimaryCtxReset", json!({"dev": 1}), json!({"type": "context", "op": "device_primary_ctx_reset"})),
        e(
            "cuStreamBeginCapture",
            json!({"hStream": "0x500a"}),
            json!({"type": "graph", "op": "stream_begin_capture", "stream": "0x500a", "capture": 3}),
        ),
        e(
            "cuStreamEndCapture",
            json!({"hStream": "0x500a", "phGraph": "0x90021"}),
            json!({"capture": 3, "graph": "0x90021"}),
        ),
        e(
            "cuGraphInstantiate",
            json!({"phGraphExec": "0x80f21", "hGraph": "0x90021", "bufferSize": 0}),
            json!({"type": "graph", "graph_exec": "0x80f21", "graph": "0x90021"}),
        ),
    ]
}

/// Compares `got` against the expectation `want` (a subset), recording
/// mismatches under `path`.
fn check_subset(path: &str, want: &Value, got: &Value, errs: &mut Vec<String>) {
    match want {
        Value::Object(w) => {
            let Some(g) = got.as_object() else {
                errs.push(format!("{path}: want an object, got {got}"));
                return;
            };
            for (k, wv) in w {
                let p = format!("{path}.{k}");
                match (wv.as_str(), g.get(k)) {
                    (Some(ABSENT), None) => {}
                    (Some(ABSENT), Some(gv)) => errs.push(format!("{p}: want no such field, got {gv}")),
                    (_, None) => errs.push(format!("{p}: missing (want {wv})")),
                    (_, Some(gv)) => check_subset(&p, wv, gv, errs),
                }
            }
        }
        Value::Array(w) => match got.as_array() {
            Some(g) if g.len() == w.len() => {
                for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                    check_subset(&format!("{path}[{i}]"), wv, gv, errs);
                }
            }
            _ => errs.push(format!("{path}: want {want}, got {got}")),
        },
        Value::String(s) if s == NN => {
            let ok = got.as_str().is_some_and(|g| g.starts_with("0x") && g != "0x0");
            if !ok {
                errs.push(format!("{path}: want a non-null hex pointer, got {got}"));
            }
        }
        _ => {
            let same = match (want.as_f64(), got.as_f64()) {
                (Some(a), Some(b)) if want.is_f64() || got.is_f64() => a == b,
                _ => want == got,
            };
            if !same {
                errs.push(format!("{path}: want {want}, got {got}"));
            }
        }
    }
}

/// The `type` a call line of this class has.
fn class_type(c: Class) -> &'static str {
    match c {
        Class::Init => "init",
        Class::Device => "device",
        Class::Context => "context",
        Class::Module => "module",
        Class::Launch => "kernel",
        Class::Graph => "graph",
        Class::Alloc | Class::Free | Class::Memory => "memory",
        Class::Copy => "memcpy",
        Class::Set => "memset",
        Class::Sync => "sync",
        Class::Stream => "stream",
        Class::Event => "event",
        Class::Other => "other",
    }
}

fn base_name(name: &str) -> &str {
    name.strip_suffix("_ptsz").or_else(|| name.strip_suffix("_ptds")).unwrap_or(name)
}

fn spec(name: &str) -> &'static tracer_common::funcs::FuncSpec {
    let b = base_name(name);
    FUNCS.iter().find(|f| f.name == b).unwrap_or_else(|| panic!("{name} is not in FUNCS"))
}

/// Calls sorted by entry time.
fn calls_by_ts(t: &Traced) -> Vec<&Value> {
    let mut v: Vec<&Value> = t.calls().collect();
    v.sort_by_key(|l| l["ts"].as_u64().unwrap_or(0));
    v
}

fn count_by_name<'a>(names: impl Iterator<Item = &'a str>) -> BTreeMap<&'a str, usize> {
    let mut m = BTreeMap::new();
    for n in names {
        *m.entry(n).or_default() += 1;
    }
    m
}

/// The `all` run, shared by the tests that look at it.
fn all_trace() -> &'static Traced {
    static T: OnceLock<Traced> = OnceLock::new();
    T.get_or_init(|| {
        let sync = SYNC_US.to_string();
        let t = common::trace_with(
            "all",
            &["--all-functions", "--returns", "all"],
            &["all"],
            &[("FAKECUDA_SYNC_US", &sync)],
            Duration::from_secs(180),
        );
        assert_eq!(t.code(), 0, "tracer on `driver all` failed\n{}", t.describe());
        t
    })
}

/// Checks a trace of `driver all` against `exp` (the calls that should be
/// in it, in order): header, footer, every call and every field.
/// `returns`: whether each call has a return probe (`--returns all`) or only
/// the functions not in ENTRY_ONLY (the default).
fn check_all_trace(t: &Traced, exp: &[Exp], probed: usize, returns_all: bool) {
    let entry_only = |name: &str| !returns_all && common::entry_only_by_default(name);
    let footer = t.footer();
    let header = t.header();
    let ctx = t.describe();

    // Header and footer.
    assert_eq!(header["format"], "tracer-jsonl", "header: {header}");
    let libcuda = header["libcuda"].as_str().unwrap_or("");
    assert!(
        std::fs::canonicalize(libcuda).ok() == std::fs::canonicalize(&common::fake().lib).ok(),
        "header.libcuda {libcuda:?} is not the fake {}",
        common::fake().lib.display()
    );
    assert_eq!(header["single_stepped_functions"], json!([]), "header: {header}");
    assert_eq!(header["probed_functions"], json!(probed), "header: {header}");
    assert_eq!(header["return_probes"], if returns_all { "all" } else { "default" }, "header: {header}");
    let mut want_entry_only: Vec<&str> = exp.iter().map(|x| x.name).filter(|n| entry_only(n)).collect();
    want_entry_only.sort_unstable();
    want_entry_only.dedup();
    let mut got_entry_only: Vec<&str> =
        header["entry_only_functions"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    got_entry_only.sort_unstable();
    assert_eq!(got_entry_only, want_entry_only, "header.entry_only_functions");
    assert_eq!(want_entry_only.is_empty(), returns_all);
    assert_eq!(t.lost(), 0, "footer: {footer}");
    assert_eq!(footer["calls"], json!(exp.len()), "footer: {footer}");
    assert_eq!(footer["incomplete_calls"], 0, "footer: {footer}");
    assert_eq!(footer["entry_lost_calls"], 0, "footer: {footer}");
    assert_eq!(footer["exit"], json!({"code": 0, "signal": null}), "footer: {footer}");
    // tracer's own CPU: the part spent before the command ran (loading, verifying) within the whole
    let c = &footer["collector"];
    for k in ["cpu_user_s", "cpu_system_s"] {
        let (before, all) = (c["before_command"][k].as_f64().unwrap(), c[k].as_f64().unwrap());
        assert!(before >= 0.0 && before <= all, "collector {k}: {c}");
    }
    // the kernel verified the programs in tracer's system time, before the command
    assert!(c["before_command"]["cpu_system_s"].as_f64().unwrap() > 0.0, "{c}");
    // the collector's thread gives way to the command on a CPU (collect/own_sched.rs)
    assert_eq!(c["sched"]["tracer"], "batch", "{c}");

    // Exactly the calls made, in order, each once.
    let got = calls_by_ts(t);
    let got_names: Vec<&str> = got.iter().map(|l| l["name"].as_str().unwrap_or("?")).collect();
    let want_names: Vec<&str> = exp.iter().map(|x| x.name).collect();
    if got_names != want_names {
        let g = count_by_name(got_names.iter().copied());
        let w = count_by_name(want_names.iter().copied());
        let mut diff = Vec::new();
        for n in g.keys().chain(w.keys()).collect::<BTreeSet<_>>() {
            let (a, b) = (w.get(n).copied().unwrap_or(0), g.get(n).copied().unwrap_or(0));
            if a != b {
                diff.push(format!("{n}: want {a}, got {b}"));
            }
        }
        let first = got_names.iter().zip(&want_names).position(|(a, b)| a != b);
        panic!(
            "call sequence differs: {} calls traced, {} made; count differences: {diff:?}; first difference at index {first:?}\n{ctx}",
            got_names.len(),
            want_names.len()
        );
    }
    let by_function = &footer["calls_by_function"];
    for (n, c) in count_by_name(want_names.iter().copied()) {
        assert_eq!(by_function[n], json!(c), "footer.calls_by_function.{n}");
    }

    // Field by field.
    let pid = header["pid"].as_u64().expect("header.pid");
    let mut errs = Vec::new();
    for (i, (line, x)) in got.iter().zip(exp).enumerate() {
        let at = format!("#{i} {}", x.name);
        let sp = spec(x.name);
        let returned = ["ret", "duration_us", "exit_cpu", "exit_seq"];
        for k in ["ts", "pid", "tid", "type", "op", "name", "cpu", "seq", "args"] {
            if line.get(k).is_none() {
                errs.push(format!("{at}: no `{k}` field"));
            }
        }
        for k in returned {
            match (line.get(k).is_some(), entry_only(x.name)) {
                (false, false) => errs.push(format!("{at}: no `{k}` field")),
                (true, true) => errs.push(format!("{at}: `{k}` on a call probed entry-only")),
                _ => {}
            }
        }
        for k in ["incomplete", "entry_lost"] {
            if line.get(k).is_some() {
                errs.push(format!("{at}: unexpected `{k}`: {line}"));
            }
        }
        if line["pid"] != json!(pid) || line["tid"] != json!(pid) {
            errs.push(format!("{at}: pid/tid {}/{}, want {pid}", line["pid"], line["tid"]));
        }
        if line["type"] != class_type(sp.class) {
            errs.push(format!("{at}: type {}, want {} (class {:?})", line["type"], class_type(sp.class), sp.class));
        }
        if !entry_only(x.name) && !line["duration_us"].as_f64().is_some_and(|d| d >= 0.0) {
            errs.push(format!("{at}: duration_us {}", line["duration_us"]));
        }
        // The args object has exactly the cuda.h parameter names.
        let want_keys: BTreeSet<String> = sp.params.iter().map(|p| p.name.trim_end_matches('_').to_string()).collect();
        let got_keys: BTreeSet<String> =
            line["args"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
        if want_keys != got_keys {
            errs.push(format!("{at}: args keys {got_keys:?}, want {want_keys:?}"));
        }
        check_subset(&format!("{at} args"), &x.args, &line["args"], &mut errs);
        let mut fields = x.fields.clone();
        let m = fields.as_object_mut().unwrap();
        if entry_only(x.name) {
            assert!(m.get("ret").is_none_or(|r| *r == 0), "{at}: an entry-only function expected to fail");
            m.remove("ret");
            m.insert("error".into(), json!(ABSENT));
        } else {
            m.entry("ret").or_insert(json!(0));
            if m["ret"] == 0 {
                m.entry("error").or_insert(json!(ABSENT));
            }
        }
        check_subset(&at, &fields, line, &mut errs);
    }

    // Durations: the fake's cuStreamSynchronize sleeps SYNC_US.
    for name in ["cuStreamSynchronize", "cuStreamSynchronize_ptsz"] {
        for l in t.named(name) {
            let d = l["duration_us"].as_f64().unwrap_or(-1.0);
            if d < SYNC_US as f64 {
                errs.push(format!("{name}: duration_us {d}, want >= {SYNC_US} (the fake sleeps that long)"));
            }
        }
    }
    // Sequence numbers: unique per CPU.
    let mut seen = BTreeSet::new();
    for l in &got {
        for (c, s) in [("cpu", "seq"), ("exit_cpu", "exit_seq")] {
            if l.get(c).is_none() && entry_only(l["name"].as_str().unwrap_or("")) {
                continue;
            }
            if !seen.insert((l[c].as_u64(), l[s].as_u64())) {
                errs.push(format!("{}: ({c}, {s}) = ({}, {}) used twice", l["name"], l[c], l[s]));
            }
        }
    }
    assert!(errs.is_empty(), "{} mismatches:\n  {}\n{ctx}", errs.len(), errs.join("\n  "));
}

#[test]
fn all_scenario_every_call_and_field() {
    if !common::root_tests_enabled() {
        return;
    }
    let exp = expected_all();
    // Every probed function is called by the scenario (so this test covers them all).
    let called: BTreeSet<&str> = exp.iter().map(|x| base_name(x.name)).collect();
    let uncovered: Vec<&str> = FUNCS.iter().map(|f| f.name).filter(|n| !called.contains(n)).collect();
    assert!(uncovered.is_empty(), "driver.c's `all` scenario does not call {uncovered:?}");
    // --all-functions: every table entry (204) + the 11 variants the fake exports.
    check_all_trace(all_trace(), &exp, FUNCS.len() + EXPORTED_VARIANTS, true);
}

#[test]
fn default_leaves_out_noisy_getters_only() {
    if !common::root_tests_enabled() {
        return;
    }
    let sync = SYNC_US.to_string();
    let t = common::trace("all-default", &["all"], &[("FAKECUDA_SYNC_US", &sync)], Duration::from_secs(180));
    assert_eq!(t.code(), 0, "tracer on `driver all` failed\n{}", t.describe());
    let exp: Vec<Exp> = expected_all().into_iter().filter(|x| !NOISY.contains(&base_name(x.name))).collect();
    assert!(!NOISY.is_empty());
    let noisy_called = expected_all().len() - exp.len();
    assert_eq!(noisy_called, NOISY.len(), "driver.c calls each NOISY function once");
    check_all_trace(&t, &exp, FUNCS.len() + EXPORTED_VARIANTS - NOISY.len(), false);
    t.cleanup();
}

#[test]
fn failed_call_reports_no_out_value() {
    if !common::root_tests_enabled() {
        return;
    }
    // driver.c: bad = 0xdeadbeef; cuMemAlloc_v2(&bad, 2 TiB) fails and the fake writes nothing.
    let t = all_trace();
    let failed: Vec<&Value> = t.named("cuMemAlloc_v2").filter(|l| l["ret"] == 2).collect();
    assert_eq!(failed.len(), 1, "{}", t.describe());
    let l = failed[0];
    assert_eq!(l["error"], "CUDA_ERROR_OUT_OF_MEMORY");
    assert_eq!(l["args"]["bytesize"], json!(2u64 << 40));
    assert!(
        l["args"]["dptr"].is_null() && l.get("ptr").is_none_or(Value::is_null),
        "a failed cuMemAlloc_v2 reports the stale out-parameter as a result \
         (args.dptr {}, ptr {}): the driver wrote nothing there",
        l["args"]["dptr"],
        l["ptr"]
    );
}

#[test]
fn fork_exec_tree_traced_unrelated_process_not() {
    if !common::root_tests_enabled() {
        return;
    }
    // The same driver, running but not started by tracer: its calls hit the
    // same uprobes and must be filtered out.
    let mut unrelated =
        common::driver_cmd(&["sleep_loop"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let upid = unrelated.id() as u64;
    std::thread::sleep(Duration::from_millis(100));
    let t = common::trace("fork", &["fork"], &[], Duration::from_secs(180));
    let still_running = unrelated.try_wait().unwrap().is_none();
    unrelated.kill().unwrap();
    unrelated.wait().unwrap();
    assert!(still_running, "the unrelated driver exited early");
    let ctx = t.describe();
    assert_eq!(t.code(), 0, "{ctx}");
    assert_eq!(t.lost(), 0, "{ctx}");

    let foreign: Vec<&Value> = t.lines.iter().filter(|l| l["pid"] == json!(upid)).collect();
    assert!(foreign.is_empty(), "lines of the untraced process {upid}: {:?}", &foreign[..foreign.len().min(3)]);
    assert_eq!(t.named("cuStreamQuery").count(), 0, "cuStreamQuery only runs in the untraced process\n{ctx}");

    let init_pid = |flags: &str| -> u64 {
        let v: Vec<&Value> = t.named("cuInit").filter(|l| l["args"]["Flags"] == flags).collect();
        assert_eq!(v.len(), 1, "cuInit(Flags {flags}) lines: {v:?}\n{ctx}");
        assert_eq!(v[0]["ret"], 0);
        v[0]["pid"].as_u64().unwrap()
    };
    let parent = init_pid("0x1");
    let child = init_pid("0x2");
    let grandchild = init_pid("0x77");
    assert_eq!(json!(parent), t.header()["pid"], "the command's pid");
    assert!(parent != child && child != grandchild && parent != grandchild);
    assert_eq!(t.calls().count(), 4, "cuInit x3 + cuMemAlloc_v2\n{ctx}");

    let alloc: Vec<&Value> = t.named("cuMemAlloc_v2").collect();
    assert_eq!(alloc.len(), 1, "{ctx}");
    let mut errs = Vec::new();
    check_subset(
        "grandchild cuMemAlloc_v2",
        &json!({"pid": grandchild, "tid": grandchild, "ret": 0, "size": 4096, "ptr": D,
                "args": {"dptr": D, "bytesize": 4096}}),
        alloc[0],
        &mut errs,
    );
    assert!(errs.is_empty(), "{errs:?}");

    let procs: Vec<&Value> = t.process_lines().collect();
    let has = |pid: u64, op: &str, f: &dyn Fn(&Value) -> bool| {
        procs.iter().any(|l| l["pid"] == json!(pid) && l["op"] == op && f(l))
    };
    assert!(
        has(parent, "fork", &|l| l["child"] == json!(child)),
        "no fork line parent {parent} -> child {child}: {procs:?}"
    );
    assert!(
        has(child, "fork", &|l| l["child"] == json!(grandchild)),
        "no fork line child {child} -> grandchild {grandchild}: {procs:?}"
    );
    assert!(
        has(grandchild, "exec", &|l| l["filename"].as_str().is_some_and(|f| f.ends_with("/driver"))),
        "no exec line for the grandchild {grandchild}: {procs:?}"
    );
    for p in [parent, child, grandchild] {
        assert!(has(p, "exit", &|_| true), "no exit line for {p}: {procs:?}");
    }
    t.cleanup();
}

/// Reads a large trace line by line without keeping it: checks every line
/// parses and calls `f` on each.
fn scan(path: &std::path::Path, mut f: impl FnMut(&Value)) -> (Value, Value, u64) {
    let file = std::fs::File::open(path).unwrap();
    let r = std::io::BufReader::with_capacity(1 << 20, file);
    let (mut first, mut last, mut n) = (Value::Null, Value::Null, 0u64);
    for (i, line) in r.lines().enumerate() {
        let line = line.unwrap();
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("{}:{}: not JSON ({e}): {line:.300}", path.display(), i + 1));
        if i == 0 {
            first = v.clone();
        }
        f(&v);
        last = v;
        n += 1;
    }
    (first, last, n)
}

#[test]
fn million_calls_all_accounted_for() {
    if !common::root_tests_enabled() {
        return;
    }
    const N: u64 = 1_000_000;
    let out = common::fresh_output("million");
    let t0 = Instant::now();
    let mut child = common::tracer_cmd(&out, &[], &["loop", &N.to_string()]).spawn().unwrap();
    let status =
        common::wait_with_timeout(&mut child, Duration::from_secs(580), false, "tracer on driver loop 1000000");
    let elapsed = t0.elapsed();
    let stderr = std::fs::read_to_string(out.with_extension("stderr")).unwrap_or_default();
    assert_eq!(common::shell_code(&status), 0, "tracer: {status}\nstderr:\n{}", common::tail(&stderr, 4000));

    let (mut complete, mut incomplete, mut entry_lost, mut other, mut procs) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut sched_lines = 0u64;
    let mut stack_lines = 0u64;
    let mut sample_lines = 0u64;
    let mut ctx_ok = true;
    let (header, footer, lines) = scan(&out, |v| match v["type"].as_str() {
        Some("header" | "footer") => {}
        Some("process") => procs += 1,
        Some("sched") => sched_lines += 1,
        // Distinct stacks (of switch-outs), referred to by other lines.
        Some("stack") => stack_lines += 1,
        // On-CPU samples (none with tracer_cmd's --stack-sample-hz 0).
        Some("sample") => sample_lines += 1,
        _ if v["name"] == "cuCtxSetCurrent" => {
            if v["incomplete"] == true {
                incomplete += 1;
            } else if v["entry_lost"] == true {
                entry_lost += 1;
            } else {
                complete += 1;
                ctx_ok &= v["args"]["ctx"].as_str().is_some_and(|s| s.starts_with("0x"));
            }
        }
        _ => other += 1,
    });
    assert_eq!(header["type"], "header");
    assert_eq!(footer["type"], "footer", "the last line is not the footer: {footer}");
    assert!(ctx_ok);
    assert_eq!(other, 0, "calls of other functions");
    let traced = complete + incomplete + entry_lost;
    let lost = footer["lost"]["total"].as_u64().expect("footer.lost.total");
    let attempted = footer["records_attempted"].as_u64().expect("footer.records_attempted");
    let received = footer["records"].as_u64().expect("footer.records");
    println!(
        "{N} calls in {:.2?} ({:.0} calls/s traced); {complete} complete, {incomplete} incomplete, \
         {entry_lost} entry_lost lines; {procs} process lines; lost records {lost}; footer: {footer}",
        elapsed,
        N as f64 / elapsed.as_secs_f64()
    );
    assert_eq!(footer["calls"], json!(traced), "footer.calls vs the call lines in the file");
    assert_eq!(footer["calls_by_function"]["cuCtxSetCurrent"], json!(traced));
    assert_eq!(footer["incomplete_calls"], json!(incomplete));
    assert_eq!(footer["entry_lost_calls"], json!(entry_lost));
    // Records: 2 per call (entry + exit) + 1 per process line + the scheduler
    // records (footer.sched.records: they become off-CPU intervals, not a line
    // each) + the stack records (footer.stacks.records: one `stack` line per
    // distinct stack, a `stack` field on the lines); what was not received
    // is counted as lost, exactly.
    let sched = footer["sched"]["records"].as_u64().expect("footer.sched.records");
    let stacks = footer["stacks"]["records"].as_u64().expect("footer.stacks.records");
    assert_eq!(
        received,
        2 * complete + incomplete + entry_lost + procs + sched + stacks,
        "footer.records vs the lines in the file, the scheduler and the stack records"
    );
    assert_eq!(attempted, received + lost, "footer: records_attempted != records + lost.total");
    let proc_attempted = attempted - 2 * N - sched - stacks;
    assert!(
        proc_attempted >= procs && proc_attempted <= procs + lost,
        "records attempted {attempted} = 2 x {N} calls + {sched} scheduler records + {stacks} stack records + {proc_attempted} others, but {procs} process lines and {lost} lost"
    );
    if lost == 0 {
        assert_eq!(complete, N, "no loss reported but {complete} of {N} calls complete");
    }
    // Calls seen whole + calls seen in part + calls lost whole == N.
    let whole_lost = (lost - (proc_attempted - procs) - incomplete - entry_lost) / 2;
    assert_eq!(traced + whole_lost, N, "traced {traced} + lost whole {whole_lost} != {N}");
    assert_eq!(lines, 2 + procs + traced + sched_lines + stack_lines + sample_lines);
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(out.with_extension("stdout"));
    let _ = std::fs::remove_file(out.with_extension("stderr"));
}

fn sigint_run(tag: &str, to_group: bool) {
    let out = common::fresh_output(tag);
    let mut c = common::tracer_cmd(&out, &[], &["sleep_loop"]);
    // Its own process group, as a shell job would be (and so the test's group is never signalled).
    c.process_group(0);
    let t0 = Instant::now();
    let mut child = c.spawn().unwrap();
    let pid = child.id() as i32;
    // The header, then some calls: the command is running and traced. Then ~1 s more.
    let have = common::wait_for_lines(&out, 5, Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(1));
    if have < 5 {
        // SAFETY: our child's process group.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        let _ = child.wait();
        let stderr = std::fs::read_to_string(out.with_extension("stderr")).unwrap_or_default();
        panic!("hung: after 60 s the trace has {have} lines (want >= 5)\nstderr:\n{stderr}");
    }
    // SAFETY: kill has no memory-safety preconditions; pid is our child (and its group).
    let r = unsafe { libc::kill(if to_group { -pid } else { pid }, libc::SIGINT) };
    assert_eq!(r, 0);
    let status = common::wait_with_timeout(&mut child, Duration::from_secs(180), true, "tracer after SIGINT");
    let t = common::finish(out, status, t0.elapsed());
    let ctx = t.describe();
    assert_eq!(t.code(), 130, "want the command's status (killed by SIGINT: 130)\n{ctx}");
    assert_eq!(t.footer()["exit"], json!({"code": null, "signal": 2}), "{ctx}");
    let queries: Vec<&Value> = t.named("cuStreamQuery").collect();
    assert!(queries.len() >= 50, "{} cuStreamQuery calls in ~1 s (one per ms)\n{ctx}", queries.len());
    let incomplete = queries.iter().filter(|l| l["incomplete"] == true).count();
    assert!(incomplete <= 1, "{incomplete} incomplete calls");
    assert!(queries.iter().all(|l| l["args"]["hStream"] == "0x5000" && (l["ret"] == 0 || l["incomplete"] == true)));
    assert_eq!(t.lost(), 0, "{ctx}");
    assert_eq!(t.calls().count(), queries.len());
    t.cleanup();
}

#[test]
fn sigint_to_process_group_stops_cleanly() {
    if !common::root_tests_enabled() {
        return;
    }
    sigint_run("sigint-group", true);
}

#[test]
fn sigint_to_tracer_alone_is_forwarded() {
    if !common::root_tests_enabled() {
        return;
    }
    sigint_run("sigint-tracer", false);
}

#[test]
fn crash_keeps_trace_and_exit_status() {
    if !common::root_tests_enabled() {
        return;
    }
    // A thread is still inside cuStreamSynchronize (10 s sleep) when the process dies.
    let t = common::trace("crash", &["crash"], &[("FAKECUDA_SYNC_US", "10000000")], Duration::from_secs(180));
    let ctx = t.describe();
    assert_eq!(t.code(), 139, "want the command's status (SIGSEGV: 139)\n{ctx}");
    assert_eq!(t.footer()["exit"], json!({"code": null, "signal": 11}), "{ctx}");
    assert_eq!(t.lost(), 0, "{ctx}");
    let calls = calls_by_ts(&t);
    let names: Vec<&str> = calls.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["cuInit", "cuMemAlloc_v2", "cuCtxSynchronize", "cuStreamSynchronize"], "{ctx}");
    let pid = t.header()["pid"].clone();
    let mut errs = Vec::new();
    check_subset("cuInit", &json!({"pid": pid, "ret": 0, "args": {"Flags": "0x5"}}), calls[0], &mut errs);
    check_subset(
        "cuMemAlloc_v2",
        &json!({"ret": 0, "ptr": D, "args": {"dptr": D, "bytesize": 4096}}),
        calls[1],
        &mut errs,
    );
    check_subset("cuCtxSynchronize", &json!({"ret": 0, "incomplete": ABSENT}), calls[2], &mut errs);
    check_subset(
        "cuStreamSynchronize",
        &json!({"pid": pid, "incomplete": true, "ret": ABSENT, "args": {"hStream": "0x5100"}}),
        calls[3],
        &mut errs,
    );
    assert!(errs.is_empty(), "{errs:?}\n{ctx}");
    assert_ne!(calls[3]["tid"], pid, "the blocked call is on the second thread");
    assert_eq!(t.footer()["incomplete_calls"], 1);
    let procs: Vec<&Value> = t.process_lines().collect();
    assert!(
        procs.iter().any(|l| l["op"] == "exit" && l["pid"] == pid),
        "no exit line for the crashed process: {procs:?}"
    );
    t.cleanup();
}

#[test]
fn threads_each_call_on_its_thread() {
    if !common::root_tests_enabled() {
        return;
    }
    const T: u64 = 4;
    const N: u64 = 20_000;
    let t = common::trace("threads", &["threads", &T.to_string(), &N.to_string()], &[], Duration::from_secs(300));
    let ctx = t.describe();
    assert_eq!(t.code(), 0, "{ctx}");
    assert_eq!(t.lost(), 0, "{ctx}");
    let pid = t.header()["pid"].as_u64().unwrap();
    let mut by_tid: HashMap<u64, Vec<&Value>> = HashMap::new();
    for l in calls_by_ts(&t) {
        assert_eq!(l["name"], "cuCtxSetCurrent");
        assert_eq!(l["pid"], json!(pid));
        assert!(l.get("incomplete").is_none() && l.get("entry_lost").is_none(), "{l}");
        by_tid.entry(l["tid"].as_u64().unwrap()).or_default().push(l);
    }
    assert_eq!(by_tid.len() as u64, T, "threads seen: {:?}", by_tid.keys().collect::<Vec<_>>());
    assert!(!by_tid.contains_key(&pid), "calls on the main thread");
    let mut bases = BTreeSet::new();
    for (tid, calls) in &by_tid {
        assert_eq!(calls.len() as u64, N, "thread {tid}");
        let first =
            u64::from_str_radix(calls[0]["args"]["ctx"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        let base = first & !0xfffff;
        bases.insert(base);
        for (i, l) in calls.iter().enumerate() {
            assert_eq!(
                l["args"]["ctx"],
                json!(format!("{:#x}", base + i as u64)),
                "thread {tid}, call {i}: out of order or wrong"
            );
        }
    }
    assert_eq!(bases, (1..=T).map(|t| t * 0x100000).collect::<BTreeSet<_>>());
    let procs: Vec<&Value> = t.process_lines().collect();
    for tid in by_tid.keys() {
        assert!(
            procs.iter().any(|l| l["op"] == "fork" && l["pid"] == json!(pid) && l["child"] == json!(*tid)),
            "no fork line for thread {tid}"
        );
        assert!(
            procs.iter().any(|l| l["op"] == "thread_exit" && l["tid"] == json!(*tid)),
            "no thread_exit line for thread {tid}"
        );
    }
    assert!(procs.iter().any(|l| l["op"] == "exit" && l["pid"] == json!(pid)));
    t.cleanup();
}

#[test]
fn upper_register_half_of_32_bit_arguments_ignored() {
    if !common::root_tests_enabled() {
        return;
    }
    // The x86-64 ABI leaves bits 32..63 of a register holding an `unsigned
    // int` argument undefined; callers (clang notably) do leave garbage there.
    let t = common::trace("dirty", &["dirty"], &[], Duration::from_secs(180));
    let ctx = t.describe();
    assert_eq!(t.code(), 0, "{ctx}");
    let calls = calls_by_ts(&t);
    assert_eq!(calls.len(), 3, "{ctx}");
    let mut errs = Vec::new();
    check_subset(
        "cuInit(unsigned int Flags)",
        &json!({"name": "cuInit", "args": {"Flags": "0x77"}}),
        calls[0],
        &mut errs,
    );
    check_subset(
        "cuStreamCreate(CUstream *, unsigned int Flags)",
        &json!({"name": "cuStreamCreate", "args": {"phStream": "0xb0001", "Flags": "0x1"}}),
        calls[1],
        &mut errs,
    );
    check_subset(
        "cuDeviceGetAttribute(int *, CUdevice_attribute, CUdevice)",
        &json!({"name": "cuDeviceGetAttribute", "args": {"pi": 161, "attrib": 16, "dev": 1}}),
        calls[2],
        &mut errs,
    );
    assert!(
        errs.is_empty(),
        "garbage in the upper half of 32-bit argument registers shows in the trace:\n  {}",
        errs.join("\n  ")
    );
    t.cleanup();
}

#[test]
fn tracer_exits_promptly_after_the_command() {
    if !common::root_tests_enabled() {
        return;
    }
    // The recording ends on the command's exit, not on a timer: the
    // command's exit record is the last line before the footer, and nothing
    // is left pending (every record attempted was written, no call waits for
    // its return, nothing arrived after the detach). How long the teardown
    // takes (detaching every probe, draining the buffer) is measured by
    // `cargo xtask bench exit`, not judged here; 180 s is only a hang guard.
    let out = common::fresh_output("prompt");
    let mut tracer = common::tracer_cmd(&out, &[], &["loop", "1"]).spawn().expect("starting tracer");
    let limit = Duration::from_secs(180);
    let st = common::wait_with_timeout(&mut tracer, limit, false, "hung: tracer after a command that exits at once");
    let t = common::finish(out, st, Duration::ZERO);
    let ctx = t.describe();
    assert_eq!(t.code(), 0, "{ctx}");
    let (header, footer) = (t.header(), t.footer());
    // Scheduler and stack lines aside (the exiting thread can still be
    // switched out and in after its exit record).
    let body: Vec<&Value> = t.lines[1..t.lines.len() - 1]
        .iter()
        .filter(|l| !matches!(l["type"].as_str(), Some("sched" | "stack" | "sample")))
        .collect();
    let last = body.last().expect("lines between header and footer");
    assert_eq!(
        (&last["type"], &last["op"], &last["pid"]),
        (&json!("process"), &json!("exit"), &header["pid"]),
        "{ctx}"
    );
    assert_eq!(footer["exit"], json!({"code": 0, "signal": null}), "{ctx}");
    assert_eq!(footer["calls_by_function"], json!({"cuCtxSetCurrent": 1}), "{ctx}");
    assert_eq!(footer["records_attempted"], footer["records"], "{ctx}");
    for pending in ["incomplete_calls", "entry_lost_calls", "records_after_detach", "lines_not_written"] {
        assert_eq!(footer[pending], json!(0), "footer.{pending}\n{ctx}");
    }
    assert_eq!(t.lost(), 0, "{ctx}");
    println!("footer.duration_s {}", footer["duration_s"]);
    t.cleanup();
}

#[test]
fn strings_in_untouched_pages_are_captured() {
    if !common::root_tests_enabled() {
        return;
    }
    // The strings live in file-backed pages the program has not touched when
    // the call starts, so a uprobe cannot read them at entry (no page faults
    // in BPF). Real kernel names often sit in such pages.
    let t = common::trace("coldstr", &["coldstr"], &[], Duration::from_secs(180));
    let ctx = t.describe();
    assert_eq!(t.code(), 0, "{ctx}");
    let calls = calls_by_ts(&t);
    let names: Vec<&str> = calls.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["cuModuleLoad", "cuModuleGetFunction", "cuLaunchKernel"], "{ctx}");
    let mut errs = Vec::new();
    check_subset(
        "cuModuleLoad",
        &json!({"ret": 0, "args": {"module": MODULE, "fname": "/cold/module/path.cubin"}}),
        calls[0],
        &mut errs,
    );
    check_subset(
        "cuModuleGetFunction",
        &json!({"ret": 0, "kernel": "cold_kernel", "handle": "0x400b", "args": {"hfunc": "0x400b", "hmod": MODULE, "name": "cold_kernel"}}),
        calls[1],
        &mut errs,
    );
    // Default mode: launches are probed entry-only (no `ret`).
    check_subset(
        "cuLaunchKernel",
        &json!({"ret": ABSENT, "kernel": "cold_kernel", "func": "0x400b"}),
        calls[2],
        &mut errs,
    );
    assert!(errs.is_empty(), "strings not captured:\n  {}\n{ctx}", errs.join("\n  "));
    t.cleanup();
}

#[test]
fn long_strings_whole_or_marked_truncated() {
    if !common::root_tests_enabled() {
        return;
    }
    let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789";
    for n in [1023usize, 1024, 5000] {
        let name: String = (0..n).map(|i| alphabet[i % 36] as char).collect();
        let t = common::trace("longname", &["longname", &n.to_string()], &[], Duration::from_secs(180));
        let ctx = t.describe();
        assert_eq!(t.code(), 0, "{ctx}");
        let calls = calls_by_ts(&t);
        assert_eq!(calls.len(), 2, "{ctx}");
        let (get, launch) = (calls[0], calls[1]);
        let handle = format!("{:#x}", 0x4000 + n);
        assert_eq!(get["args"]["hfunc"], json!(handle), "n={n}");
        assert_eq!(launch["func"], json!(handle), "n={n}");
        let arg = get["args"]["name"].as_str().unwrap_or_else(|| panic!("n={n}: args.name {}", get["args"]["name"]));
        let kernel = get["kernel"].as_str().unwrap_or_else(|| panic!("n={n}: kernel {}", get["kernel"]));
        if arg == name {
            assert_eq!(kernel, name, "n={n}: args.name whole but kernel differs");
        } else {
            // Cut: must say so, and keep the captured prefix.
            if n < 1024 && arg.strip_suffix('…') == Some(name.as_str()) {
                // 1023 characters fill the 1024-byte capture exactly: tracer
                // cannot tell that from a longer string and marks it "possibly cut".
                println!("n={n}: whole string, but marked as possibly cut (…)");
                assert_eq!(kernel, name);
                assert_eq!(launch["kernel"], get["kernel"], "n={n}: the launch resolves to another name");
                t.cleanup();
                continue;
            }
            assert!(n >= 1024, "n={n}: a string that fits was cut: {} chars", arg.chars().count());
            let prefix = arg
                .strip_suffix('…')
                .unwrap_or_else(|| panic!("n={n}: cut string not marked with …: {} chars", arg.len()));
            assert!(
                name.starts_with(prefix) && prefix.len() >= 1000,
                "n={n}: args.name is not a prefix ({} chars)",
                prefix.len()
            );
            assert!(name.starts_with(kernel) && kernel.len() >= prefix.len(), "n={n}: kernel {} chars", kernel.len());
            println!("n={n}: string cut to {} chars, marked with …", prefix.len());
        }
        assert_eq!(launch["kernel"], get["kernel"], "n={n}: the launch resolves to another name");
        t.cleanup();
    }
}

/// Every recording with BPF statistics adds its probes' gauge (the entry programs' ns per run)
/// to the machine's host speed history and says in its footer how it compares with the
/// command's earlier recordings there (collect/host_speed_history.rs): three recordings of one
/// command meet the median of their three gauges; another probe set is another key.
#[test]
fn recordings_of_one_command_meet_their_machines_usual_speed() {
    if !common::root_tests_enabled() {
        return;
    }
    let history = common::fresh_output("host-speed").with_extension("history.json");
    let env = [("TRACER_HOST_SPEED_HISTORY", history.to_str().unwrap())];
    let gauge = |f: &Value| {
        let s = &f["bpf_stats"];
        let ns = s["cu_enter"]["run_time_ns"].as_u64().unwrap() + s["cu_launch"]["run_time_ns"].as_u64().unwrap_or(0);
        let runs = s["cu_enter"]["runs"].as_u64().unwrap() + s["cu_launch"]["runs"].as_u64().unwrap_or(0);
        (ns as f64 / runs as f64, runs)
    };
    let mut gauges = Vec::new();
    for i in 1..=3u64 {
        let t = common::trace_with("host-speed", &["--bpf-stats"], &["loop", "1000"], &env, Duration::from_secs(60));
        assert!(t.status.success(), "{}", t.describe());
        let f = t.lines.last().unwrap();
        let h = &f["host_speed"];
        let (g, runs) = gauge(f);
        assert!(runs >= 1000, "{f}");
        // (JSON's floats round-trip to within an ulp or so)
        let near = |k: &str, want: f64| h[k].as_f64().is_some_and(|x| (x - want).abs() <= want.abs() * 1e-12);
        assert!(near("gauge_ns", g) && h["runs"] == json!(runs), "{h}: want {g} over {runs} runs");
        assert_eq!(h["recordings"], json!(i), "{h}");
        // the argv as a digest: each argument and a NUL
        let argv = format!("{}\0loop\01000\0", common::fake().driver.to_str().unwrap());
        let digest = format!("sha256:{}", tracer_format::digest::sha256_hex(argv.as_bytes()));
        assert_eq!(h["key"]["command"], json!(digest), "{h}");
        gauges.push(g);
        // the summary says it: the first has nothing to compare with, the later ones their factor
        let said: Vec<&str> = t.stderr.lines().filter(|l| l.contains("host speed: ")).collect();
        assert_eq!(said.len(), 1, "{}", t.stderr);
        if i == 1 {
            assert!(
                said[0].contains("host speed: not compared with the machine's usual speed (the first recording"),
                "{}",
                said[0]
            );
        } else {
            let f = h["factor"].as_f64().unwrap();
            assert!(
                said[0].starts_with(&format!("host speed: {f:.2}x the usual time"))
                    && said[0].ends_with(&format!(" over {i} recordings of the command)")),
                "{}",
                said[0]
            );
        }
        if i == 3 {
            let mut v = gauges.clone();
            v.sort_by(f64::total_cmp);
            assert!(near("reference_ns", v[1]), "{h}: want {}", v[1]);
            assert!(near("factor", (g / v[1]).clamp(0.5, 2.0)), "{h}");
        }
        t.cleanup();
    }
    // the history holds the three, oldest first
    let text = std::fs::read_to_string(&history).unwrap();
    let hist: Value = serde_json::from_str(&text).unwrap();
    let e = &hist["entries"].as_array().unwrap();
    assert_eq!(e.len(), 1, "{text}");
    let kept: Vec<f64> = e[0]["gauges"].as_array().unwrap().iter().map(|g| g["ns"].as_f64().unwrap()).collect();
    assert_eq!(kept.len(), 3, "{text}");
    assert!(kept.iter().zip(&gauges).all(|(a, b)| (a - b).abs() <= b * 1e-12), "{kept:?} {gauges:?}");
    // another probe set: compared with nothing
    let t = common::trace_with(
        "host-speed",
        &["--bpf-stats", "--no-sched"],
        &["loop", "1000"],
        &env,
        Duration::from_secs(60),
    );
    let h = &t.lines.last().unwrap()["host_speed"];
    assert_eq!((h["recordings"].clone(), h["factor"].clone()), (json!(1), json!(1.0)), "{h}");
    t.cleanup();
    let _ = std::fs::remove_file(&history);
    let _ = std::fs::remove_file(history.with_extension("json.lock"));
}
