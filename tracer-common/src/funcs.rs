//! The libcuda driver functions tracer knows how to decode: name, class and
//! parameter list (names as in cuda.h, CUDA 13.0). The eBPF side never sees
//! this table; userspace turns each entry into an attach [`Cookie`].
//!
//! Each entry also covers the per-thread-default-stream variants: an exported
//! `NAME_ptsz` / `NAME_ptds` symbol gets its own [`FuncId`] and the same decoder.

use crate::cookie::Cookie;
use crate::event::{BLOB_CAP, MAX_ARGS};

/// What a call does, for the `type` / `op` fields and the summaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    Init,
    Device,
    Context,
    Module,
    Launch,
    Graph,
    Alloc,
    Free,
    Memory,
    Copy,
    Set,
    Sync,
    Stream,
    Event,
    Other,
}

/// How one parameter is captured and printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    /// Opaque driver handle (CUcontext, CUmodule, CUstream, ...): hex.
    Handle,
    /// Host pointer: hex.
    Ptr,
    /// CUdeviceptr: hex.
    DevPtr,
    U32,
    I32,
    U64,
    /// Byte count.
    Size,
    /// 32-bit bit flags (`unsigned int`): hex. The upper half of the
    /// register is undefined in the x86-64 ABI and is masked off.
    Flags,
    /// 64-bit bit flags (`unsigned long long`, `cuuint64_t`): hex.
    Flags64,
    /// CUdevice ordinal (int).
    Device,
    /// `const char *` read at entry.
    Str,
    /// Out-parameter: pointer saved at entry, pointee read at return.
    OutHandle,
    OutDevPtr,
    OutPtr,
    OutI32,
    OutU32,
    OutSize,
    OutF32,
    /// `const CUlaunchConfig *`, read at entry with its attributes.
    LaunchConfig,
    /// `const CUDA_MEMCPY2D *` (128 bytes).
    Memcpy2D,
    /// `const CUDA_MEMCPY3D *` (200 bytes).
    Memcpy3D,
    /// `const CUmemAllocationProp *` (32 bytes).
    AllocProp,
    /// `const CUuuid *` (16 bytes).
    Uuid,
    /// `const CUmemAccessDesc *` (first of `count`, 12 bytes).
    AccessDesc,
    /// `const CUDA_KERNEL_NODE_PARAMS_v1 *` (56 bytes: func, grid, block,
    /// shared memory, kernelParams, extra).
    KernelNodeV1,
    /// `const CUDA_KERNEL_NODE_PARAMS *` (v2, 72 bytes: v1 + kern, ctx).
    KernelNode,
    /// `const CUDA_MEMSET_NODE_PARAMS *` (40 bytes).
    MemsetNode,
    /// `CUgraphNodeParams *`: type, then the union at 16 (232 bytes read: a
    /// memcpy node's CUDA_MEMCPY3D ends there; the rest is reserved).
    GraphNodeParams,
    /// `CUmemLocation` passed by value (8 bytes in one register: type, id).
    MemLocation,
    /// `const CUgraphNode *` of `numDependencies` handles: the graph entry
    /// program copies up to [`crate::graph::NODES_CAP`] of them after the
    /// struct ([`crate::graph`]). Also a batch copy's `sizes` (of `count`).
    Nodes,
}

impl Arg {
    pub const fn is_out(self) -> bool {
        matches!(
            self,
            Arg::OutHandle | Arg::OutDevPtr | Arg::OutPtr | Arg::OutI32 | Arg::OutU32 | Arg::OutSize | Arg::OutF32
        )
    }
    pub const fn out_is_4_bytes(self) -> bool {
        matches!(self, Arg::OutI32 | Arg::OutU32 | Arg::OutF32)
    }
    /// Bytes read for a struct argument, 0 for others.
    pub const fn blob_size(self) -> usize {
        match self {
            Arg::LaunchConfig => BLOB_CAP,
            Arg::Memcpy2D => 128,
            Arg::Memcpy3D => 200,
            Arg::AllocProp => 32,
            Arg::Uuid => 16,
            Arg::AccessDesc => 12,
            Arg::KernelNodeV1 => 56,
            Arg::KernelNode => 72,
            Arg::MemsetNode => 40,
            Arg::GraphNodeParams => crate::graph::NODES_OFF,
            _ => 0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    pub kind: Arg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FuncSpec {
    pub name: &'static str,
    pub class: Class,
    pub params: &'static [Param],
}

/// Symbol-name variants probed for every table entry.
pub const VARIANTS: [&str; 3] = ["", "_ptsz", "_ptds"];

/// Identifies one probed symbol: table index * 4 + variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub u16);

impl FuncId {
    pub const fn new(index: usize, variant: usize) -> Self {
        FuncId((index * 4 + variant) as u16)
    }
    pub const fn index(self) -> usize {
        (self.0 / 4) as usize
    }
    pub const fn variant(self) -> usize {
        (self.0 % 4) as usize
    }
    pub fn spec(self) -> Option<&'static FuncSpec> {
        FUNCS.get(self.index()).filter(|_| self.variant() < VARIANTS.len())
    }
}

impl FuncSpec {
    /// Whether the entry record carries a struct or node lists
    /// (`CallEnterBlob`, the `cu_enter_blob` program).
    pub const fn has_blob(&self) -> bool {
        let mut i = 0;
        while i < self.params.len() {
            let k = self.params[i].kind;
            if k.blob_size() > 0 || matches!(k, Arg::Nodes) {
                return true;
            }
            i += 1;
        }
        false
    }

    /// The attach cookie for this function under `id`.
    pub const fn cookie(&self, id: FuncId) -> Cookie {
        let mut c = Cookie::new(id.0);
        let n = self.params.len();
        if n > 6 {
            c = c.with_stack_args((n - 6) as u8);
        }
        let mut outs = 0;
        let mut i = 0;
        while i < n {
            let k = self.params[i].kind;
            if matches!(k, Arg::Str) {
                c = c.with_str(i as u8);
            } else if k.is_out() && outs < 2 {
                c = c.with_out(outs, i as u8);
                if k.out_is_4_bytes() {
                    c = c.with_out4(outs);
                }
                outs += 1;
            } else if k.blob_size() > 0 {
                c = c.with_blob(i as u8, k.blob_size() as u16, matches!(k, Arg::LaunchConfig));
            }
            i += 1;
        }
        with_node_lists(c, self.params)
    }
}

/// Sets the node-list bits for a function whose parameters include
/// [`Arg::Nodes`] (the count is the parameter named `numDependencies`, or `count` for a
/// batch copy's sizes).
const fn with_node_lists(c: Cookie, params: &[Param]) -> Cookie {
    let mut list = None;
    let mut pair = false;
    let mut count = None;
    let mut i = 0;
    while i < params.len() {
        if matches!(params[i].kind, Arg::Nodes) {
            if list.is_none() {
                list = Some(i as u8);
            } else {
                pair = true;
            }
        }
        if matches!(params[i].kind, Arg::Size) && (eq(params[i].name, "numDependencies") || eq(params[i].name, "count"))
        {
            count = Some(i as u8);
        }
        i += 1;
    }
    match (list, count) {
        (Some(l), Some(n)) => c.with_launch_args(if pair { 1 } else { 0 }, l, Some(n)),
        _ => c,
    }
}

const fn eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

macro_rules! f {
    ($name:literal, $class:ident, [$($pn:ident : $pk:ident),* $(,)?]) => {
        FuncSpec {
            name: $name,
            class: Class::$class,
            params: &[$(Param { name: stringify!($pn), kind: Arg::$pk }),*],
        }
    };
}

/// The table. Order is irrelevant except that ids are derived from it.
pub static FUNCS: &[FuncSpec] = &[
    // ---- initialisation and devices
    f!("cuInit", Init, [Flags: Flags]),
    f!("cuDriverGetVersion", Init, [driverVersion: OutI32]),
    f!("cuGetExportTable", Init, [ppExportTable: OutPtr, pExportTableId: Uuid]),
    f!("cuGetProcAddress_v2", Init, [symbol: Str, pfn: OutPtr, cudaVersion: I32, flags: Flags64, symbolStatus: Ptr]),
    f!("cuDeviceGet", Device, [device: OutI32, ordinal: I32]),
    f!("cuDeviceGetCount", Device, [count: OutI32]),
    f!("cuDeviceGetName", Device, [name: Ptr, len: I32, dev: Device]),
    f!("cuDeviceGetUuid_v2", Device, [uuid: Ptr, dev: Device]),
    f!("cuDeviceTotalMem_v2", Device, [bytes: OutSize, dev: Device]),
    f!("cuDeviceGetAttribute", Device, [pi: OutI32, attrib: I32, dev: Device]),
    f!("cuDeviceGetDefaultMemPool", Device, [pool_out: OutHandle, dev: Device]),
    f!("cuDeviceCanAccessPeer", Device, [canAccessPeer: OutI32, dev: Device, peerDev: Device]),
    f!("cuDevicePrimaryCtxRetain", Context, [pctx: OutHandle, dev: Device]),
    f!("cuDevicePrimaryCtxRelease_v2", Context, [dev: Device]),
    f!("cuDevicePrimaryCtxReset_v2", Context, [dev: Device]),
    f!("cuDevicePrimaryCtxSetFlags_v2", Context, [dev: Device, flags: Flags]),
    f!("cuDevicePrimaryCtxGetState", Context, [dev: Device, flags: OutU32, active: OutI32]),
    // ---- contexts
    f!("cuCtxCreate_v2", Context, [pctx: OutHandle, flags: Flags, dev: Device]),
    f!("cuCtxCreate_v3", Context, [pctx: OutHandle, paramsArray: Ptr, numParams: I32, flags: Flags, dev: Device]),
    f!("cuCtxCreate_v4", Context, [pctx: OutHandle, ctxCreateParams: Ptr, flags: Flags, dev: Device]),
    f!("cuCtxDestroy_v2", Context, [ctx: Handle]),
    f!("cuCtxSetCurrent", Context, [ctx: Handle]),
    f!("cuCtxGetCurrent", Context, [pctx: OutHandle]),
    f!("cuCtxPushCurrent_v2", Context, [ctx: Handle]),
    f!("cuCtxPopCurrent_v2", Context, [pctx: OutHandle]),
    f!("cuCtxGetDevice", Context, [device: OutI32]),
    f!("cuCtxSetLimit", Context, [limit: U32, value: Size]),
    f!("cuCtxGetStreamPriorityRange", Context, [leastPriority: OutI32, greatestPriority: OutI32]),
    f!("cuCtxSynchronize", Sync, []),
    // ---- modules, libraries, functions
    f!("cuModuleLoad", Module, [module: OutHandle, fname: Str]),
    f!("cuModuleLoadData", Module, [module: OutHandle, image: Ptr]),
    f!("cuModuleLoadDataEx", Module, [module: OutHandle, image: Ptr, numOptions: U32, options: Ptr, optionValues: Ptr]),
    f!("cuModuleLoadFatBinary", Module, [module: OutHandle, fatCubin: Ptr]),
    f!("cuModuleUnload", Module, [hmod: Handle]),
    f!("cuModuleGetFunction", Module, [hfunc: OutHandle, hmod: Handle, name: Str]),
    f!("cuModuleGetGlobal_v2", Module, [dptr: OutDevPtr, bytes: OutSize, hmod: Handle, name: Str]),
    f!("cuLibraryLoadData", Module, [library: OutHandle, code: Ptr, jitOptions: Ptr, jitOptionsValues: Ptr, numJitOptions: U32, libraryOptions: Ptr, libraryOptionValues: Ptr, numLibraryOptions: U32]),
    f!("cuLibraryLoadFromFile", Module, [library: OutHandle, fileName: Str, jitOptions: Ptr, jitOptionsValues: Ptr, numJitOptions: U32, libraryOptions: Ptr, libraryOptionValues: Ptr, numLibraryOptions: U32]),
    f!("cuLibraryUnload", Module, [library: Handle]),
    f!("cuLibraryGetKernel", Module, [pKernel: OutHandle, library: Handle, name: Str]),
    f!("cuLibraryGetModule", Module, [pMod: OutHandle, library: Handle]),
    f!("cuLibraryGetGlobal", Module, [dptr: OutDevPtr, bytes: OutSize, library: Handle, name: Str]),
    f!("cuKernelGetFunction", Module, [pFunc: OutHandle, kernel: Handle]),
    f!("cuKernelGetAttribute", Module, [pi: OutI32, attrib: I32, kernel: Handle, dev: Device]),
    f!("cuKernelSetAttribute", Module, [attrib: I32, val: I32, kernel: Handle, dev: Device]),
    f!("cuFuncGetAttribute", Module, [pi: OutI32, attrib: I32, hfunc: Handle]),
    f!("cuFuncSetAttribute", Module, [hfunc: Handle, attrib: I32, value: I32]),
    f!("cuFuncSetCacheConfig", Module, [hfunc: Handle, config: U32]),
    f!("cuFuncGetName", Module, [name: OutPtr, hfunc: Handle]),
    f!("cuOccupancyMaxActiveBlocksPerMultiprocessor", Module, [numBlocks: OutI32, func: Handle, blockSize: I32, dynamicSMemSize: Size]),
    f!("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", Module, [numBlocks: OutI32, func: Handle, blockSize: I32, dynamicSMemSize: Size, flags: Flags]),
    // ---- launches and graphs
    f!("cuLaunchKernel", Launch, [f: Handle, gridDimX: U32, gridDimY: U32, gridDimZ: U32, blockDimX: U32, blockDimY: U32, blockDimZ: U32, sharedMemBytes: U32, hStream: Handle, kernelParams: Ptr, extra: Ptr]),
    f!("cuLaunchKernelEx", Launch, [config: LaunchConfig, f: Handle, kernelParams: Ptr, extra: Ptr]),
    f!("cuLaunchCooperativeKernel", Launch, [f: Handle, gridDimX: U32, gridDimY: U32, gridDimZ: U32, blockDimX: U32, blockDimY: U32, blockDimZ: U32, sharedMemBytes: U32, hStream: Handle, kernelParams: Ptr]),
    f!("cuLaunchHostFunc", Launch, [hStream: Handle, fn_: Ptr, userData: Ptr]),
    f!("cuGraphLaunch", Graph, [hGraphExec: Handle, hStream: Handle]),
    f!("cuGraphInstantiateWithFlags", Graph, [phGraphExec: OutHandle, hGraph: Handle, flags: Flags64]),
    f!("cuGraphInstantiateWithParams", Graph, [phGraphExec: OutHandle, hGraph: Handle, instantiateParams: Ptr]),
    f!("cuGraphExecDestroy", Graph, [hGraphExec: Handle]),
    f!("cuGraphDestroy", Graph, [hGraph: Handle]),
    f!("cuGraphUpload", Graph, [hGraphExec: Handle, hStream: Handle]),
    f!("cuStreamBeginCapture_v2", Graph, [hStream: Handle, mode: U32]),
    f!("cuStreamEndCapture", Graph, [hStream: Handle, phGraph: OutHandle]),
    f!("cuStreamIsCapturing", Graph, [hStream: Handle, captureStatus: OutU32]),
    // ---- graph construction (docs/trace-format.md, "CUDA graphs")
    f!("cuStreamBeginCaptureToGraph", Graph, [hStream: Handle, hGraph: Handle, dependencies: Nodes, dependencyData: Ptr, numDependencies: Size, mode: U32]),
    f!("cuStreamGetCaptureInfo_v2", Graph, [hStream: Handle, captureStatus_out: OutU32, id_out: OutHandle, graph_out: Ptr, dependencies_out: Ptr, numDependencies_out: Ptr]),
    f!("cuStreamGetCaptureInfo_v3", Graph, [hStream: Handle, captureStatus_out: OutU32, id_out: OutHandle, graph_out: Ptr, dependencies_out: Ptr, edgeData_out: Ptr, numDependencies_out: Ptr]),
    f!("cuThreadExchangeStreamCaptureMode", Graph, [mode: Ptr]),
    f!("cuGraphCreate", Graph, [phGraph: OutHandle, flags: Flags]),
    f!("cuGraphClone", Graph, [phGraphClone: OutHandle, originalGraph: Handle]),
    f!("cuGraphAddKernelNode", Graph, [phGraphNode: OutHandle, hGraph: Handle, dependencies: Nodes, numDependencies: Size, nodeParams: KernelNodeV1]),
    f!("cuGraphAddKernelNode_v2", Graph, [phGraphNode: OutHandle, hGraph: Handle, dependencies: Nodes, numDependencies: Size, nodeParams: KernelNode]),
    f!("cuGraphAddMemcpyNode", Graph, [phGraphNode: OutHandle, hGraph: Handle, dependencies: Nodes, numDependencies: Size, copyParams: Memcpy3D, ctx: Handle]),
    f!("cuGraphAddMemsetNode", Graph, [phGraphNode: OutHandle, hGraph: Handle, dependencies: Nodes, numDependencies: Size, memsetParams: MemsetNode, ctx: Handle]),
    f!("cuGraphAddEventRecordNode", Graph, [phGraphNode: OutHandle, hGraph: Handle, dependencies: Nodes, numDependencies: Size, event: Handle]),
    f!("cuGraphAddEventWaitNode", Graph, [phGraphNode: OutHandle, hGraph: Handle, dependencies: Nodes, numDependencies: Size, event: Handle]),
    f!("cuGraphAddChildGraphNode", Graph, [phGraphNode: OutHandle, hGraph: Handle, dependencies: Nodes, numDependencies: Size, childGraph: Handle]),
    f!("cuGraphAddEmptyNode", Graph, [phGraphNode: OutHandle, hGraph: Handle, dependencies: Nodes, numDependencies: Size]),
    f!("cuGraphAddNode", Graph, [phGraphNode: OutHandle, hGraph: Handle, dependencies: Nodes, numDependencies: Size, nodeParams: GraphNodeParams]),
    f!("cuGraphAddNode_v2", Graph, [phGraphNode: OutHandle, hGraph: Handle, dependencies: Nodes, dependencyData: Ptr, numDependencies: Size, nodeParams: GraphNodeParams]),
    f!("cuGraphAddDependencies", Graph, [hGraph: Handle, from: Nodes, to: Nodes, numDependencies: Size]),
    f!("cuGraphAddDependencies_v2", Graph, [hGraph: Handle, from: Nodes, to: Nodes, edgeData: Ptr, numDependencies: Size]),
    f!("cuGraphDestroyNode", Graph, [hNode: Handle]),
    f!("cuGraphKernelNodeSetParams", Graph, [hNode: Handle, nodeParams: KernelNodeV1]),
    f!("cuGraphKernelNodeSetParams_v2", Graph, [hNode: Handle, nodeParams: KernelNode]),
    f!("cuGraphNodeSetParams", Graph, [hNode: Handle, nodeParams: GraphNodeParams]),
    f!("cuGraphExecKernelNodeSetParams", Graph, [hGraphExec: Handle, hNode: Handle, nodeParams: KernelNodeV1]),
    f!("cuGraphExecKernelNodeSetParams_v2", Graph, [hGraphExec: Handle, hNode: Handle, nodeParams: KernelNode]),
    f!("cuGraphExecNodeSetParams", Graph, [hGraphExec: Handle, hNode: Handle, nodeParams: GraphNodeParams]),
    f!("cuGraphExecUpdate_v2", Graph, [hGraphExec: Handle, hGraph: Handle, resultInfo: Ptr]),
    f!("cuGraphInstantiate_v2", Graph, [phGraphExec: OutHandle, hGraph: Handle, phErrorNode: Ptr, logBuffer: Ptr, bufferSize: Size]),
    // ---- allocation
    f!("cuMemAlloc_v2", Alloc, [dptr: OutDevPtr, bytesize: Size]),
    f!("cuMemAllocPitch_v2", Alloc, [dptr: OutDevPtr, pPitch: OutSize, WidthInBytes: Size, Height: Size, ElementSizeBytes: U32]),
    f!("cuMemAllocManaged", Alloc, [dptr: OutDevPtr, bytesize: Size, flags: Flags]),
    f!("cuMemAllocAsync", Alloc, [dptr: OutDevPtr, bytesize: Size, hStream: Handle]),
    f!("cuMemAllocFromPoolAsync", Alloc, [dptr: OutDevPtr, bytesize: Size, pool: Handle, hStream: Handle]),
    f!("cuMemAllocHost_v2", Alloc, [pp: OutPtr, bytesize: Size]),
    f!("cuMemHostAlloc", Alloc, [pp: OutPtr, bytesize: Size, Flags: Flags]),
    f!("cuMemHostRegister_v2", Alloc, [p: Ptr, bytesize: Size, Flags: Flags]),
    f!("cuMemCreate", Alloc, [handle: OutHandle, size: Size, prop: AllocProp, flags: Flags64]),
    f!("cuMemAddressReserve", Alloc, [ptr: OutDevPtr, size: Size, alignment: Size, addr: DevPtr, flags: Flags64]),
    f!("cuMemFree_v2", Free, [dptr: DevPtr]),
    f!("cuMemFreeAsync", Free, [dptr: DevPtr, hStream: Handle]),
    f!("cuMemFreeHost", Free, [p: Ptr]),
    f!("cuMemHostUnregister", Free, [p: Ptr]),
    f!("cuMemRelease", Free, [handle: Handle]),
    f!("cuMemAddressFree", Free, [ptr: DevPtr, size: Size]),
    f!("cuMemMap", Memory, [ptr: DevPtr, size: Size, offset: Size, handle: Handle, flags: Flags64]),
    f!("cuMemUnmap", Memory, [ptr: DevPtr, size: Size]),
    f!("cuMemSetAccess", Memory, [ptr: DevPtr, size: Size, desc: AccessDesc, count: Size]),
    f!("cuMemGetInfo_v2", Memory, [free: OutSize, total: OutSize]),
    f!("cuMemGetAddressRange_v2", Memory, [pbase: OutDevPtr, psize: OutSize, dptr: DevPtr]),
    f!("cuMemHostGetDevicePointer_v2", Memory, [pdptr: OutDevPtr, p: Ptr, Flags: Flags]),
    f!("cuPointerGetAttribute", Memory, [data: Ptr, attribute: U32, ptr: DevPtr]),
    f!("cuPointerGetAttributes", Memory, [numAttributes: U32, attributes: Ptr, data: Ptr, ptr: DevPtr]),
    f!("cuMemPrefetchAsync", Memory, [devPtr: DevPtr, count: Size, dstDevice: Device, hStream: Handle]),
    // ---- copies
    f!("cuMemcpy", Copy, [dst: DevPtr, src: DevPtr, ByteCount: Size]),
    f!("cuMemcpyAsync", Copy, [dst: DevPtr, src: DevPtr, ByteCount: Size, hStream: Handle]),
    f!("cuMemcpyPeer", Copy, [dstDevice: DevPtr, dstContext: Handle, srcDevice: DevPtr, srcContext: Handle, ByteCount: Size]),
    f!("cuMemcpyPeerAsync", Copy, [dstDevice: DevPtr, dstContext: Handle, srcDevice: DevPtr, srcContext: Handle, ByteCount: Size, hStream: Handle]),
    f!("cuMemcpyHtoD_v2", Copy, [dstDevice: DevPtr, srcHost: Ptr, ByteCount: Size]),
    f!("cuMemcpyDtoH_v2", Copy, [dstHost: Ptr, srcDevice: DevPtr, ByteCount: Size]),
    f!("cuMemcpyDtoD_v2", Copy, [dstDevice: DevPtr, srcDevice: DevPtr, ByteCount: Size]),
    f!("cuMemcpyHtoDAsync_v2", Copy, [dstDevice: DevPtr, srcHost: Ptr, ByteCount: Size, hStream: Handle]),
    f!("cuMemcpyDtoHAsync_v2", Copy, [dstHost: Ptr, srcDevice: DevPtr, ByteCount: Size, hStream: Handle]),
    f!("cuMemcpyDtoDAsync_v2", Copy, [dstDevice: DevPtr, srcDevice: DevPtr, ByteCount: Size, hStream: Handle]),
    f!("cuMemcpy2D_v2", Copy, [pCopy: Memcpy2D]),
    f!("cuMemcpy2DUnaligned_v2", Copy, [pCopy: Memcpy2D]),
    f!("cuMemcpy2DAsync_v2", Copy, [pCopy: Memcpy2D, hStream: Handle]),
    f!("cuMemcpy3D_v2", Copy, [pCopy: Memcpy3D]),
    f!("cuMemcpy3DAsync_v2", Copy, [pCopy: Memcpy3D, hStream: Handle]),
    // ---- sets
    f!("cuMemsetD8_v2", Set, [dstDevice: DevPtr, uc: U32, N: Size]),
    f!("cuMemsetD16_v2", Set, [dstDevice: DevPtr, us: U32, N: Size]),
    f!("cuMemsetD32_v2", Set, [dstDevice: DevPtr, ui: U32, N: Size]),
    f!("cuMemsetD8Async", Set, [dstDevice: DevPtr, uc: U32, N: Size, hStream: Handle]),
    f!("cuMemsetD16Async", Set, [dstDevice: DevPtr, us: U32, N: Size, hStream: Handle]),
    f!("cuMemsetD32Async", Set, [dstDevice: DevPtr, ui: U32, N: Size, hStream: Handle]),
    f!("cuMemsetD2D8_v2", Set, [dstDevice: DevPtr, dstPitch: Size, uc: U32, Width: Size, Height: Size]),
    f!("cuMemsetD2D16_v2", Set, [dstDevice: DevPtr, dstPitch: Size, us: U32, Width: Size, Height: Size]),
    f!("cuMemsetD2D32_v2", Set, [dstDevice: DevPtr, dstPitch: Size, ui: U32, Width: Size, Height: Size]),
    f!("cuMemsetD2D8Async", Set, [dstDevice: DevPtr, dstPitch: Size, uc: U32, Width: Size, Height: Size, hStream: Handle]),
    f!("cuMemsetD2D16Async", Set, [dstDevice: DevPtr, dstPitch: Size, us: U32, Width: Size, Height: Size, hStream: Handle]),
    f!("cuMemsetD2D32Async", Set, [dstDevice: DevPtr, dstPitch: Size, ui: U32, Width: Size, Height: Size, hStream: Handle]),
    // ---- streams, events, synchronisation
    f!("cuStreamCreate", Stream, [phStream: OutHandle, Flags: Flags]),
    f!("cuStreamCreateWithPriority", Stream, [phStream: OutHandle, flags: Flags, priority: I32]),
    f!("cuStreamDestroy_v2", Stream, [hStream: Handle]),
    f!("cuStreamSynchronize", Sync, [hStream: Handle]),
    f!("cuStreamQuery", Sync, [hStream: Handle]),
    f!("cuStreamWaitEvent", Sync, [hStream: Handle, hEvent: Handle, Flags: Flags]),
    f!("cuEventCreate", Event, [phEvent: OutHandle, Flags: Flags]),
    f!("cuEventDestroy_v2", Event, [hEvent: Handle]),
    f!("cuEventRecord", Event, [hEvent: Handle, hStream: Handle]),
    f!("cuEventRecordWithFlags", Event, [hEvent: Handle, hStream: Handle, flags: Flags]),
    f!("cuEventQuery", Sync, [hEvent: Handle]),
    f!("cuEventSynchronize", Sync, [hEvent: Handle]),
    f!("cuEventElapsedTime", Event, [pMilliseconds: OutF32, hStart: Handle, hEnd: Handle]),
    f!("cuEventElapsedTime_v2", Event, [pMilliseconds: OutF32, hStart: Handle, hEnd: Handle]),
    // ---- graph construction, added after the rest (the others keep their function ids)
    f!("cuGraphNodeFindInClone", Graph, [phNode: OutHandle, hOriginalNode: Handle, hClonedGraph: Handle]),
    // ---- entry points that cuGetProcAddress hands out by CUDA version (12.x, 13.0) and
    // the work they submit or wait for; signatures from cuda.h 13.0 (the `_v1` ones from
    // its __CUDA_API_VERSION_INTERNAL section). docs/capture.md lists what is left out.
    f!("cuGetProcAddress", Init, [symbol: Str, pfn: OutPtr, cudaVersion: I32, flags: Flags64]),
    f!("cuCtxSynchronize_v2", Sync, [ctx: Handle]),
    f!("cuCtxGetDevice_v2", Context, [device: OutI32, ctx: Handle]),
    f!("cuDeviceGetUuid", Device, [uuid: Ptr, dev: Device]),
    f!("cuGraphExecUpdate", Graph, [hGraphExec: Handle, hGraph: Handle, hErrorNode_out: Ptr, updateResult_out: Ptr]),
    f!("cuStreamGetCaptureInfo", Graph, [hStream: Handle, captureStatus_out: OutU32, id_out: OutHandle]),
    f!("cuStreamUpdateCaptureDependencies", Graph, [hStream: Handle, dependencies: Ptr, numDependencies: Size, flags: Flags]),
    f!("cuStreamUpdateCaptureDependencies_v2", Graph, [hStream: Handle, dependencies: Ptr, dependencyData: Ptr, numDependencies: Size, flags: Flags]),
    f!("cuGraphGetEdges", Graph, [hGraph: Handle, from: Ptr, to: Ptr, numEdges: Ptr]),
    f!("cuGraphGetEdges_v2", Graph, [hGraph: Handle, from: Ptr, to: Ptr, edgeData: Ptr, numEdges: Ptr]),
    f!("cuMemPrefetchAsync_v2", Memory, [devPtr: DevPtr, count: Size, location: MemLocation, flags: Flags, hStream: Handle]),
    f!("cuMemAdvise", Memory, [devPtr: DevPtr, count: Size, advice: U32, device: Device]),
    f!("cuMemAdvise_v2", Memory, [devPtr: DevPtr, count: Size, advice: U32, location: MemLocation]),
    f!("cuMemPrefetchBatchAsync", Memory, [dptrs: Ptr, sizes: Ptr, count: Size, prefetchLocs: Ptr, prefetchLocIdxs: Ptr, numPrefetchLocs: Size, flags: Flags64, hStream: Handle]),
    f!("cuMemDiscardBatchAsync", Memory, [dptrs: Ptr, sizes: Ptr, count: Size, flags: Flags64, hStream: Handle]),
    f!("cuMemDiscardAndPrefetchBatchAsync", Memory, [dptrs: Ptr, sizes: Ptr, count: Size, prefetchLocs: Ptr, prefetchLocIdxs: Ptr, numPrefetchLocs: Size, flags: Flags64, hStream: Handle]),
    // `sizes`: the copy program reads the first NODES_CAP sizes (tracer-common/src/graph.rs).
    f!("cuMemcpyBatchAsync", Copy, [dsts: Ptr, srcs: Ptr, sizes: Nodes, count: Size, attrs: Ptr, attrsIdxs: Ptr, numAttrs: Size, failIdx: Ptr, hStream: Handle]),
    f!("cuMemcpyBatchAsync_v2", Copy, [dsts: Ptr, srcs: Ptr, sizes: Nodes, count: Size, attrs: Ptr, attrsIdxs: Ptr, numAttrs: Size, hStream: Handle]),
    f!("cuMemcpy3DBatchAsync", Copy, [numOps: Size, opList: Ptr, failIdx: Ptr, flags: Flags64, hStream: Handle]),
    f!("cuMemcpy3DBatchAsync_v2", Copy, [numOps: Size, opList: Ptr, flags: Flags64, hStream: Handle]),
    f!("cuMemcpy3DPeer", Copy, [pCopy: Ptr]),
    f!("cuMemcpy3DPeerAsync", Copy, [pCopy: Ptr, hStream: Handle]),
    f!("cuMemcpyHtoA_v2", Copy, [dstArray: Handle, dstOffset: Size, srcHost: Ptr, ByteCount: Size]),
    f!("cuMemcpyAtoH_v2", Copy, [dstHost: Ptr, srcArray: Handle, srcOffset: Size, ByteCount: Size]),
    f!("cuMemcpyDtoA_v2", Copy, [dstArray: Handle, dstOffset: Size, srcDevice: DevPtr, ByteCount: Size]),
    f!("cuMemcpyAtoD_v2", Copy, [dstDevice: DevPtr, srcArray: Handle, srcOffset: Size, ByteCount: Size]),
    f!("cuMemcpyAtoA_v2", Copy, [dstArray: Handle, dstOffset: Size, srcArray: Handle, srcOffset: Size, ByteCount: Size]),
    f!("cuMemcpyHtoAAsync_v2", Copy, [dstArray: Handle, dstOffset: Size, srcHost: Ptr, ByteCount: Size, hStream: Handle]),
    f!("cuMemcpyAtoHAsync_v2", Copy, [dstHost: Ptr, srcArray: Handle, srcOffset: Size, ByteCount: Size, hStream: Handle]),
    f!("cuStreamWaitValue32", Stream, [stream: Handle, addr: DevPtr, value: U32, flags: Flags]),
    f!("cuStreamWaitValue32_v2", Stream, [stream: Handle, addr: DevPtr, value: U32, flags: Flags]),
    f!("cuStreamWaitValue64", Stream, [stream: Handle, addr: DevPtr, value: U64, flags: Flags]),
    f!("cuStreamWaitValue64_v2", Stream, [stream: Handle, addr: DevPtr, value: U64, flags: Flags]),
    f!("cuStreamWriteValue32", Stream, [stream: Handle, addr: DevPtr, value: U32, flags: Flags]),
    f!("cuStreamWriteValue32_v2", Stream, [stream: Handle, addr: DevPtr, value: U32, flags: Flags]),
    f!("cuStreamWriteValue64", Stream, [stream: Handle, addr: DevPtr, value: U64, flags: Flags]),
    f!("cuStreamWriteValue64_v2", Stream, [stream: Handle, addr: DevPtr, value: U64, flags: Flags]),
    f!("cuStreamBatchMemOp", Stream, [stream: Handle, count: U32, paramArray: Ptr, flags: Flags]),
    f!("cuStreamBatchMemOp_v2", Stream, [stream: Handle, count: U32, paramArray: Ptr, flags: Flags]),
    f!("cuStreamAddCallback", Stream, [hStream: Handle, callback: Ptr, userData: Ptr, flags: Flags]),
    f!("cuCtxRecordEvent", Event, [hCtx: Handle, hEvent: Handle]),
    f!("cuCtxWaitEvent", Event, [hCtx: Handle, hEvent: Handle]),
    // The CUipcMemHandle (64 bytes) is passed on the stack: Flags is the second register.
    f!("cuIpcOpenMemHandle", Memory, [pdptr: OutDevPtr, Flags: Flags]),
    f!("cuIpcOpenMemHandle_v2", Memory, [pdptr: OutDevPtr, Flags: Flags]),
    f!("cuIpcGetMemHandle", Memory, [pHandle: Ptr, dptr: DevPtr]),
    f!("cuIpcCloseMemHandle", Memory, [dptr: DevPtr]),
    // The first versions that CUDA 13's runtime still asks for by an old version (seen on
    // the GPU machine: cuDevicePrimaryCtxRelease at 7000, cuStreamBeginCapture at 10000),
    // with the signatures of their _v2.
    f!("cuDevicePrimaryCtxRelease", Context, [dev: Device]),
    f!("cuDevicePrimaryCtxReset", Context, [dev: Device]),
    f!("cuStreamBeginCapture", Graph, [hStream: Handle]),
    f!("cuGraphInstantiate", Graph, [phGraphExec: OutHandle, hGraph: Handle, phErrorNode: Ptr, logBuffer: Ptr, bufferSize: Size]),
];

/// State getters that the CUDA runtime calls several times per kernel launch
/// and whose answers say nothing about the program's GPU work. Measured on
/// GPT-2 generation (torch 2.11, CUDA 13): 65,918 cuDevicePrimaryCtxGetState,
/// 9,749 cuCtxGetCurrent and 7,696 cuKernelGetAttribute calls for 22,758
/// launches. Probing them costs more than probing the launches, so they are
/// left out unless `--all-functions` is given (the header lists them).
pub const NOISY: &[&str] = &[
    "cuDevicePrimaryCtxGetState",
    "cuCtxGetCurrent",
    "cuCtxGetDevice",
    "cuCtxGetDevice_v2",
    "cuKernelGetAttribute",
    "cuFuncGetAttribute",
    "cuDriverGetVersion",
    "cuDeviceGet",
    "cuDeviceGetCount",
    "cuStreamIsCapturing",
    "cuPointerGetAttribute",
    "cuPointerGetAttributes",
];

pub fn is_noisy(id: FuncId) -> bool {
    id.spec().is_some_and(|s| NOISY.contains(&s.name))
}

/// Functions probed at entry only by default (`--returns default`): they
/// never block and return nothing but a status, so a return probe (a second
/// trap per call) would add only the status and the CPU time of the call.
/// They are the bulk of a launch-bound program's calls (launches were 77% of
/// GPT-2 generation's probed calls). Copies, sets and synchronization keep
/// their return probe: they can block, and their duration is what the
/// idle-gap analysis needs.
pub const ENTRY_ONLY: &[&str] = &[
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cuLaunchCooperativeKernel",
    "cuLaunchHostFunc",
    "cuGraphLaunch",
    "cuKernelSetAttribute",
    "cuFuncSetAttribute",
    "cuEventRecord",
    "cuEventRecordWithFlags",
    "cuStreamWaitEvent",
];

pub fn is_entry_only_by_default(id: FuncId) -> bool {
    id.spec().is_some_and(|s| ENTRY_ONLY.contains(&s.name) && !s.params.iter().any(|p| p.kind.is_out()))
}

/// The base of a driver function's name, without its per-thread-stream
/// variant and its version: `cuMemcpyHtoDAsync_v2_ptsz` -> `cuMemcpyHtoDAsync`,
/// `cuCtxSynchronize_v2` -> `cuCtxSynchronize`. Programs reach versioned entry
/// points (`cuGetProcAddress` by CUDA version): whatever consumes recorded
/// calls matches on this, not on the header's name.
pub fn base_name(name: &str) -> &str {
    let n = name.strip_suffix("_ptsz").or_else(|| name.strip_suffix("_ptds")).unwrap_or(name);
    match n.rsplit_once("_v") {
        Some((b, v)) if !v.is_empty() && v.bytes().all(|c| c.is_ascii_digit()) => b,
        _ => n,
    }
}

/// Looks a table entry up by exact symbol name (variant suffixes included).
pub fn lookup(symbol: &str) -> Option<FuncId> {
    for (i, spec) in FUNCS.iter().enumerate() {
        if let Some(rest) = symbol.strip_prefix(spec.name)
            && let Some(v) = VARIANTS.iter().position(|s| *s == rest)
        {
            return Some(FuncId::new(i, v));
        }
    }
    None
}

const _: () = {
    let mut i = 0;
    while i < FUNCS.len() {
        assert!(FUNCS[i].params.len() <= MAX_ARGS);
        i += 1;
    }
    assert!(FUNCS.len() * 4 < u16::MAX as usize);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names_drop_the_variant_and_the_version() {
        for (name, base) in [
            ("cuMemcpyHtoDAsync_v2_ptsz", "cuMemcpyHtoDAsync"),
            ("cuCtxSynchronize_v2", "cuCtxSynchronize"),
            ("cuStreamGetCaptureInfo_v3", "cuStreamGetCaptureInfo"),
            ("cuLaunchKernel_ptsz", "cuLaunchKernel"),
            ("cuEventRecord_ptds", "cuEventRecord"),
            ("cuStreamSynchronize", "cuStreamSynchronize"),
            // not a version: kept
            ("cuGraphAddKernelNode_vx", "cuGraphAddKernelNode_vx"),
            ("cuFoo_v", "cuFoo_v"),
        ] {
            assert_eq!(base_name(name), base, "{name}");
        }
    }

    #[test]
    fn entry_only_functions_exist_and_have_no_out_parameters() {
        for name in ENTRY_ONLY {
            let id = lookup(name).unwrap_or_else(|| panic!("{name} is not in the table"));
            assert!(is_entry_only_by_default(id), "{name} has an out-parameter");
            assert!(!is_noisy(id), "{name} is excluded by default anyway");
        }
        let n = (0..FUNCS.len()).filter(|&i| is_entry_only_by_default(FuncId::new(i, 0))).count();
        assert_eq!(n, ENTRY_ONLY.len());
        // Blocking calls keep their return probe.
        for name in ["cuStreamSynchronize", "cuMemcpyDtoHAsync_v2", "cuMemAlloc_v2", "cuCtxSynchronize"] {
            assert!(!is_entry_only_by_default(lookup(name).unwrap()), "{name}");
        }
    }
}
