/*
 * Test program for tracer: calls the fake libcuda (fakecuda.c) in known ways.
 *
 *   driver all          every probed function with distinctive arguments
 *                       (the exact sequence ../root_uprobes.rs expects)
 *   driver fork         cuInit(0x1); fork; the child calls cuInit(0x2), forks,
 *                       and the grandchild execs `driver grandchild`
 *   driver grandchild   cuInit(0x77), cuMemAlloc_v2(4096)
 *   driver loop N       cuCtxSetCurrent(i) for i in 0..N
 *   driver threads T N  T threads, each cuCtxSetCurrent(0x100000 * (t + 1) + i) for i in 0..N
 *   driver sleep_loop   cuStreamQuery(0x5000) every millisecond, forever
 *   driver crash        a few calls, a thread blocked in cuStreamSynchronize,
 *                       then SIGSEGV
 *   driver dirty        32-bit arguments passed with garbage in the upper
 *                       half of their registers (allowed by the x86-64 ABI)
 *   driver longname N   cuModuleGetFunction with an N-character name, then a
 *                       launch of the function it returns
 *   driver coldstr      cuModuleLoad and cuModuleGetFunction with strings in
 *                       file-backed pages the process has not touched yet
 *                       (not resident: a uprobe cannot read them at entry)
 *
 * Prints nothing unless something fails (exit status 1 with a message).
 *
 * Build: cc -O0 -o driver driver.c -L DIR -l:libcuda.so.1 -Wl,-rpath,DIR -pthread
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda.h"

#define H(v) ((void *)(uintptr_t)(v))

/* Fake host addresses: the fake library never dereferences them. */
#define HOSTBUF H(0x10000000)
#define HOSTREG H(0x11000000)
#define IMAGE H(0x20000000)

static int failures;

#define CHECK(call, want)                                                                  \
    do {                                                                                   \
        CUresult r_ = (call);                                                              \
        if (r_ != (want)) {                                                                \
            fprintf(stderr, "driver: %s returned %d, expected %d\n", #call, r_, (want));   \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)
#define OK(call) CHECK(call, CUDA_SUCCESS)

#define EXPECT(cond)                                                                       \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "driver: %s:%d: %s is false\n", __FILE__, __LINE__, #cond);    \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

static void host_fn(void *p) { (void)p; }

/* The 300-character kernel name: "abc...xyz0123456789" repeated. */
static void long_name(char *buf, size_t n) {
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    for (size_t i = 0; i < n; i++)
        buf[i] = alphabet[i % 36];
    buf[n] = 0;
}

/* ======================================================================== */
/* all: every probed function, in the order root_uprobes.rs lists them     */
/* ======================================================================== */

#include "graphs_all.c"

static void stream_callback(CUstream hStream, CUresult status, void *userData) {
    (void)hStream, (void)status, (void)userData;
}

/* The `all` scenario's last part: the table's versioned entry points and
 * work/wait functions (fakeversioned.c), each once, in table order. Live
 * contexts and the managed allocation; streams 0x8001.., arrays 0x13000 and
 * 0x13100, fake host structs at 0x12000000.. (the fake never reads them). */
static void versioned_calls_all(CUcontext ctx, CUcontext ctx3, CUdeviceptr dm) {
    void *pfn = 0;
    OK(cuGetProcAddress("cuCtxSynchronize", &pfn, 13000, 0));
    EXPECT(pfn != 0);
    OK(cuCtxSynchronize_v2(ctx));
    CUdevice dev = -1;
    OK(cuCtxGetDevice_v2(&dev, ctx));
    EXPECT(dev == 2);
    CUuuid uuid;
    OK(cuDeviceGetUuid(&uuid, 1));
    EXPECT(uuid.bytes[0] == 0x10 && uuid.bytes[15] == 0x1f);

    /* graphs and capture */
    CUgraphNode error_node = H(1);
    CUgraphExecUpdateResult update_result = -1;
    OK(cuGraphExecUpdate(H(0x80003), H(0x620000), &error_node, &update_result));
    EXPECT(error_node == 0 && update_result == 0);
    CUstreamCaptureStatus st = 0;
    cuuint64_t id = 0;
    OK(cuStreamGetCaptureInfo(H(0x5008), &st, &id));
    EXPECT(st == 1 && id == 0x108);
    OK(cuStreamGetCaptureInfo_ptsz(H(0x5009), &st, &id));
    EXPECT(id == 0x109);
    CUgraphNode deps[2] = {H(0xa0000), H(0xa0010)};
    OK(cuStreamUpdateCaptureDependencies(H(0x5008), deps, 2, 1));
    OK(cuStreamUpdateCaptureDependencies_v2(H(0x5009), deps, 0, 1, 0));
    size_t nedges = 0;
    OK(cuGraphGetEdges(H(0x610000), 0, 0, &nedges));
    EXPECT(nedges == 3);
    CUgraphNode from[3] = {0}, to[3] = {0};
    OK(cuGraphGetEdges_v2(H(0x610000), from, to, 0, &nedges));
    EXPECT(nedges == 3 && from[2] == H(0xa0020) && to[2] == H(0xa0030));

    /* unified memory */
    CUmemLocation dev1 = {1, 1}, numa1 = {3, 1}, dev0 = {1, 0};
    OK(cuMemPrefetchAsync_v2(dm, 4096, dev1, 0, H(0x8001)));
    OK(cuMemPrefetchAsync_v2_ptsz(dm, 2048, numa1, 0, H(0x8002)));
    OK(cuMemAdvise(dm, 4096, 3, 1));
    OK(cuMemAdvise_v2(dm, 2048, 5, dev0));
    CUdeviceptr ptrs[2] = {dm, dm + 2048};
    size_t sizes[2] = {2048, 1024};
    CUmemLocation locs[1] = {{1, 0}};
    size_t loc_idxs[1] = {0};
    OK(cuMemPrefetchBatchAsync(ptrs, sizes, 2, locs, loc_idxs, 1, 0, H(0x8003)));
    OK(cuMemDiscardBatchAsync(ptrs, sizes, 2, 0, H(0x8004)));
    OK(cuMemDiscardAndPrefetchBatchAsync(ptrs, sizes, 2, locs, loc_idxs, 1, 0, H(0x8005)));

    /* copies */
    CUdeviceptr srcs[2] = {(CUdeviceptr)(uintptr_t)HOSTBUF, (CUdeviceptr)(uintptr_t)HOSTBUF + 2048};
    size_t attr_idxs[1] = {0};
    size_t fail = 0;
    OK(cuMemcpyBatchAsync(ptrs, srcs, sizes, 2, H(0x12000000), attr_idxs, 1, &fail, H(0x8006)));
    EXPECT(fail == SIZE_MAX);
    OK(cuMemcpyBatchAsync_v2(ptrs, srcs, sizes, 2, H(0x12000000), attr_idxs, 1, H(0x8007)));
    OK(cuMemcpyBatchAsync_v2_ptsz(ptrs, srcs, sizes, 1, H(0x12000000), attr_idxs, 1, H(0x8008)));
    fail = 0;
    OK(cuMemcpy3DBatchAsync(2, H(0x12100000), &fail, 0, H(0x8009)));
    EXPECT(fail == SIZE_MAX);
    OK(cuMemcpy3DBatchAsync_v2(1, H(0x12100000), 0, H(0x800a)));
    OK(cuMemcpy3DPeer(H(0x12200000)));
    OK(cuMemcpy3DPeerAsync(H(0x12200000), H(0x800b)));
    CUarray a1 = H(0x13000), a2 = H(0x13100);
    OK(cuMemcpyHtoA_v2(a1, 16, HOSTBUF, 4096));
    OK(cuMemcpyAtoH_v2(HOSTBUF, a1, 32, 2048));
    OK(cuMemcpyDtoA_v2(a2, 64, dm, 1024));
    OK(cuMemcpyAtoD_v2(dm, a2, 128, 512));
    OK(cuMemcpyAtoA_v2(a2, 256, a1, 8, 128));
    OK(cuMemcpyHtoAAsync_v2(a1, 0, HOSTBUF, 64, H(0x800c)));
    OK(cuMemcpyAtoHAsync_v2(HOSTBUF, a1, 4, 32, H(0x800c)));

    /* stream memory operations */
    CUstream s = H(0x800d);
    OK(cuStreamWaitValue32(s, dm, 0x11, 0x1));
    OK(cuStreamWaitValue32_v2(s, dm + 4, 0x22, 0x2));
    OK(cuStreamWaitValue64(s, dm + 8, 0x3300000000ULL, 0x1));
    OK(cuStreamWaitValue64_v2(s, dm + 16, 0x44, 0x0));
    OK(cuStreamWriteValue32(s, dm + 24, 0x55, 0x0));
    OK(cuStreamWriteValue32_v2(s, dm + 28, 0x66, 0x1));
    OK(cuStreamWriteValue64(s, dm + 32, 0x7700000000ULL, 0x0));
    OK(cuStreamWriteValue64_v2(s, dm + 40, 0x88, 0x1));
    OK(cuStreamBatchMemOp(s, 2, H(0x12300000), 0));
    OK(cuStreamBatchMemOp_v2(s, 3, H(0x12300000), 0));
    OK(cuStreamAddCallback(H(0x800e), stream_callback, H(0x32001), 0));

    /* context-wide events */
    OK(cuCtxRecordEvent(ctx, H(0xee004)));
    OK(cuCtxWaitEvent(ctx3, H(0xee004)));

    /* inter-process memory: the handle is passed by value (64 bytes, on the stack) */
    CUipcMemHandle ipc;
    memset(&ipc, 0, sizeof ipc);
    ipc.reserved[63] = 5;
    CUdeviceptr opened = 0, opened2 = 0;
    OK(cuIpcOpenMemHandle(&opened, ipc, 0x1));
    EXPECT(opened == 0x7f6000500000ULL);
    ipc.reserved[63] = 6;
    OK(cuIpcOpenMemHandle_v2(&opened2, ipc, 0x1));
    EXPECT(opened2 == 0x7f7000600000ULL);
    OK(cuIpcGetMemHandle(&ipc, dm));
    EXPECT(ipc.reserved[5] == 0x7f && ipc.reserved[4] == 0x20 && ipc.reserved[63] == 0);
    OK(cuIpcCloseMemHandle(opened));

    /* first versions still handed out for old CUDA versions */
    OK(cuDevicePrimaryCtxRelease(1));
    OK(cuDevicePrimaryCtxReset(1));
    OK(cuStreamBeginCapture(H(0x500a)));
    CUgraph captured = 0;
    OK(cuStreamEndCapture(H(0x500a), &captured));
    EXPECT(captured == H(0x90021));
    CUgraphExec exec1 = 0;
    OK(cuGraphInstantiate(&exec1, captured, 0, 0, 0));
    EXPECT(exec1 == H(0x80f21));
}

static int scenario_all(void) {
    /* ---- initialisation and devices */
    OK(cuInit(0));
    int version = 0;
    OK(cuDriverGetVersion(&version));
    EXPECT(version == 13000);
    CUuuid table_id;
    for (int i = 0; i < 16; i++)
        table_id.bytes[i] = (char)i;
    const void *table = 0;
    OK(cuGetExportTable(&table, &table_id));
    void *pfn = 0;
    CUdriverProcAddressQueryResult status = -1;
    OK(cuGetProcAddress_v2("cuLaunchKernel", &pfn, 12000, 0x2, &status));
    CUdevice dev = -1;
    OK(cuDeviceGet(&dev, 1));
    int count = 0;
    OK(cuDeviceGetCount(&count));
    char name[64];
    OK(cuDeviceGetName(name, 64, dev));
    CUuuid uuid;
    OK(cuDeviceGetUuid_v2(&uuid, dev));
    size_t total_mem = 0;
    OK(cuDeviceTotalMem_v2(&total_mem, dev));
    int attr = 0;
    OK(cuDeviceGetAttribute(&attr, 16, dev));
    CUmemoryPool pool = 0;
    OK(cuDeviceGetDefaultMemPool(&pool, dev));
    int can = -1;
    OK(cuDeviceCanAccessPeer(&can, 0, dev));

    /* ---- primary context */
    CUcontext primary = 0;
    OK(cuDevicePrimaryCtxRetain(&primary, dev));
    OK(cuDevicePrimaryCtxSetFlags_v2(dev, 0x4));
    unsigned int pflags = 0;
    int active = 0;
    OK(cuDevicePrimaryCtxGetState(dev, &pflags, &active));
    OK(cuDevicePrimaryCtxRelease_v2(dev));
    OK(cuDevicePrimaryCtxReset_v2(dev));

    /* ---- contexts */
    CUcontext ctx = 0, ctx3 = 0, ctx4 = 0, cur = 0;
    OK(cuCtxCreate_v2(&ctx, 0x1, 0));
    OK(cuCtxCreate_v3(&ctx3, 0, 0, 0x2, 0));
    OK(cuCtxCreate_v4(&ctx4, 0, 0x3, 1));
    OK(cuCtxSetCurrent(ctx));
    OK(cuCtxGetCurrent(&cur));
    EXPECT(cur == ctx);
    OK(cuCtxPushCurrent_v2(ctx3));
    OK(cuCtxPopCurrent_v2(&cur));
    EXPECT(cur == ctx3);
    CUdevice ctx_dev = 0;
    OK(cuCtxGetDevice(&ctx_dev));
    OK(cuCtxSetLimit(1, 1 << 20));
    int least = 9, greatest = 9;
    OK(cuCtxGetStreamPriorityRange(&least, &greatest));
    OK(cuCtxSynchronize());

    /* ---- modules */
    CUmodule mod = 0, mod2 = 0, mod3 = 0, mod4 = 0;
    OK(cuModuleLoad(&mod, "/tmp/fake.cubin"));
    OK(cuModuleLoadData(&mod2, IMAGE));
    OK(cuModuleLoadDataEx(&mod3, IMAGE, 0, 0, 0));
    OK(cuModuleLoadFatBinary(&mod4, IMAGE));
    CUfunction f2 = 0, flong = 0;
    OK(cuModuleGetFunction(&f2, mod, "other_kernel"));
    char longname[301];
    long_name(longname, 300);
    OK(cuModuleGetFunction(&flong, mod, longname));
    CUdeviceptr gptr = 0;
    size_t gsize = 0;
    OK(cuModuleGetGlobal_v2(&gptr, &gsize, mod, "my_global"));

    /* ---- libraries and kernels */
    CUlibrary lib = 0, lib2 = 0;
    OK(cuLibraryLoadData(&lib, IMAGE, (CUjit_option *)H(0x21000), (void **)H(0x22000), 3,
                         (CUlibraryOption *)H(0x23000), (void **)H(0x24000), 5));
    OK(cuLibraryLoadFromFile(&lib2, "/tmp/fake.fatbin", 0, 0, 0, 0, 0, 0));
    CUkernel kern = 0;
    OK(cuLibraryGetKernel(&kern, lib, "my_kernel"));
    CUfunction f = 0;
    OK(cuKernelGetFunction(&f, kern));
    CUmodule lmod = 0;
    OK(cuLibraryGetModule(&lmod, lib));
    CUdeviceptr lptr = 0;
    size_t lsize = 0;
    OK(cuLibraryGetGlobal(&lptr, &lsize, lib, "lib_global"));
    int ival = 0;
    OK(cuKernelGetAttribute(&ival, 0, kern, 0));
    OK(cuKernelSetAttribute(8, 65536, kern, 0));
    OK(cuFuncGetAttribute(&ival, 1, f));
    OK(cuFuncSetAttribute(f, 8, 32768));
    OK(cuFuncSetCacheConfig(f, 2));
    const char *fname = 0;
    OK(cuFuncGetName(&fname, f));
    int blocks = 0;
    OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 256, 1024));
    OK(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, f, 128, 2048, 0x1));

    /* ---- launches */
    int a = 1;
    float b = 2.0f;
    void *params[] = {&a, &b};
    OK(cuLaunchKernel(f, 2, 3, 4, 128, 1, 1, 4096, H(0x5000), params, 0));
    OK(cuLaunchKernel(f2, 16, 1, 1, 256, 1, 1, 0, 0, params, 0));
    OK(cuLaunchKernel_ptsz(f, 5, 1, 1, 32, 1, 1, 0, H(0x5002), params, 0));

    CUlaunchAttribute attrs[2];
    memset(attrs, 0, sizeof attrs);
    attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[0].value.clusterDim.x = 2;
    attrs[0].value.clusterDim.y = 1;
    attrs[0].value.clusterDim.z = 1;
    attrs[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attrs[1].value.priority = -3;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = 7, cfg.gridDimY = 8, cfg.gridDimZ = 9;
    cfg.blockDimX = 32, cfg.blockDimY = 2, cfg.blockDimZ = 1;
    cfg.sharedMemBytes = 1024;
    cfg.hStream = H(0x6000);
    cfg.attrs = attrs;
    cfg.numAttrs = 2;
    OK(cuLaunchKernelEx(&cfg, f, params, 0));
    CUlaunchConfig cfg2;
    memset(&cfg2, 0, sizeof cfg2);
    cfg2.gridDimX = cfg2.gridDimY = cfg2.gridDimZ = 1;
    cfg2.blockDimX = cfg2.blockDimY = cfg2.blockDimZ = 1;
    cfg2.hStream = H(0x6001);
    OK(cuLaunchKernelEx_ptsz(&cfg2, f2, params, 0));
    OK(cuLaunchCooperativeKernel(f, 10, 1, 1, 64, 1, 1, 512, H(0x5003), params));
    OK(cuLaunchHostFunc(H(0x5004), host_fn, H(0x32000)));

    /* ---- graphs */
    CUstreamCaptureStatus capturing = 0;
    CUgraph graph = 0;
    CUgraphExec exec = 0, exec2 = 0;
    OK(cuStreamBeginCapture_v2(H(0x5005), 1));
    OK(cuStreamIsCapturing(H(0x5005), &capturing));
    OK(cuStreamEndCapture(H(0x5005), &graph));
    OK(cuGraphInstantiateWithFlags(&exec, graph, 0x1));
    char instantiate_params[32] = {0};
    OK(cuGraphInstantiateWithParams(&exec2, graph, (CUDA_GRAPH_INSTANTIATE_PARAMS *)instantiate_params));
    OK(cuGraphUpload(exec, H(0x5005)));
    OK(cuGraphLaunch(exec, H(0x5005)));
    OK(cuGraphExecDestroy(exec2));
    OK(cuGraphDestroy(graph));
    graph_calls_all(f, f2, params);

    /* ---- allocation */
    CUdeviceptr d = 0, d2 = 0, bad = 0xdeadbeef, dp = 0, dm = 0, da = 0, dpool = 0, va = 0;
    size_t pitch = 0;
    OK(cuMemAlloc_v2(&d, 1 << 20));
    EXPECT(d == 0x7f0000000000ULL);
    OK(cuMemAlloc_v2(&d2, 1 << 20));
    EXPECT(d2 == 0x7f0000100000ULL);
    CHECK(cuMemAlloc_v2(&bad, 2ULL << 40), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT(bad == 0xdeadbeef);
    OK(cuMemAllocPitch_v2(&dp, &pitch, 1000, 64, 4));
    OK(cuMemAllocManaged(&dm, 4096, 0x1));
    OK(cuMemAllocAsync(&da, 8192, H(0x5006)));
    OK(cuMemAllocFromPoolAsync(&dpool, 16384, pool, H(0x5006)));
    void *hp = 0, *hp2 = 0;
    OK(cuMemAllocHost_v2(&hp, 4096));
    OK(cuMemHostAlloc(&hp2, 8192, 0x2));
    OK(cuMemHostRegister_v2(HOSTREG, 65536, 0x1));
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = 1;
    prop.requestedHandleTypes = 1;
    prop.location.type = 1;
    prop.location.id = 1;
    prop.allocFlags.gpuDirectRDMACapable = 1;
    CUmemGenericAllocationHandle handle = 0;
    OK(cuMemCreate(&handle, 2 << 20, &prop, 0));
    OK(cuMemAddressReserve(&va, 4 << 20, 2 << 20, 0, 0));
    OK(cuMemMap(va, 2 << 20, 0, handle, 0));
    CUmemAccessDesc access;
    access.location.type = 1;
    access.location.id = 1;
    access.flags = 3;
    OK(cuMemSetAccess(va, 2 << 20, &access, 1));
    size_t free_mem = 0, total = 0;
    OK(cuMemGetInfo_v2(&free_mem, &total));
    CUdeviceptr base = 0;
    size_t range = 0;
    OK(cuMemGetAddressRange_v2(&base, &range, d + 0x1234));
    CUdeviceptr hdev = 0;
    OK(cuMemHostGetDevicePointer_v2(&hdev, hp, 0));
    int memtype = 0;
    OK(cuPointerGetAttribute(&memtype, 2, d));
    CUpointer_attribute pattrs[2] = {2, 9};
    void *pdata[2] = {&memtype, &ival};
    OK(cuPointerGetAttributes(2, pattrs, pdata, d));
    OK(cuMemPrefetchAsync(dm, 4096, 0, H(0x5006)));

    /* ---- copies */
    OK(cuMemcpyHtoD_v2(d, HOSTBUF, 4096));
    OK(cuMemcpyHtoD_v2_ptds(d, HOSTBUF, 128));
    OK(cuMemcpyDtoH_v2(HOSTBUF, d, 2048));
    OK(cuMemcpyDtoD_v2(d2, d, 1024));
    OK(cuMemcpyHtoDAsync_v2(d, HOSTBUF, 512, H(0x7000)));
    OK(cuMemcpyHtoDAsync_v2_ptsz(d, HOSTBUF, 256, H(0x7001)));
    OK(cuMemcpyDtoHAsync_v2(HOSTBUF, d, 8192, H(0x7000)));
    OK(cuMemcpyDtoDAsync_v2(d2, d, 64, H(0x7000)));
    OK(cuMemcpy(d, (CUdeviceptr)(uintptr_t)HOSTBUF, 100));
    OK(cuMemcpy_ptds((CUdeviceptr)(uintptr_t)HOSTBUF, d2, 200));
    OK(cuMemcpy(d2, d, 300));
    OK(cuMemcpy((CUdeviceptr)(uintptr_t)hp, d, 400));
    OK(cuMemcpyAsync(d, (CUdeviceptr)(uintptr_t)hp, 500, H(0x7002)));
    OK(cuMemcpyAsync_ptsz(d2, d, 600, H(0x7003)));
    OK(cuMemcpyPeer(d2, ctx, d, ctx3, 700));
    OK(cuMemcpyPeerAsync(d2, ctx, d, ctx3, 800, H(0x7004)));

    CUDA_MEMCPY2D h2d;
    memset(&h2d, 0, sizeof h2d);
    h2d.srcMemoryType = CU_MEMORYTYPE_HOST;
    h2d.srcHost = HOSTBUF;
    h2d.srcPitch = 256;
    h2d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    h2d.dstDevice = d;
    h2d.dstPitch = 512;
    h2d.WidthInBytes = 256;
    h2d.Height = 4;
    OK(cuMemcpy2D_v2(&h2d));
    CUDA_MEMCPY2D d2h;
    memset(&d2h, 0, sizeof d2h);
    d2h.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    d2h.srcDevice = d2;
    d2h.dstMemoryType = CU_MEMORYTYPE_HOST;
    d2h.dstHost = HOSTBUF;
    d2h.WidthInBytes = 128;
    d2h.Height = 8;
    OK(cuMemcpy2DUnaligned_v2(&d2h));
    CUDA_MEMCPY2D d2d;
    memset(&d2d, 0, sizeof d2d);
    d2d.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    d2d.srcDevice = d;
    d2d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    d2d.dstDevice = d2;
    d2d.WidthInBytes = 64;
    d2d.Height = 2;
    OK(cuMemcpy2DAsync_v2(&d2d, H(0x7005)));
    CUDA_MEMCPY3D c3;
    memset(&c3, 0, sizeof c3);
    c3.srcMemoryType = CU_MEMORYTYPE_HOST;
    c3.srcHost = HOSTBUF;
    c3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c3.dstDevice = d;
    c3.WidthInBytes = 64;
    c3.Height = 4;
    c3.Depth = 2;
    OK(cuMemcpy3D_v2(&c3));
    CUDA_MEMCPY3D c3b;
    memset(&c3b, 0, sizeof c3b);
    c3b.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c3b.srcDevice = d2;
    c3b.dstMemoryType = CU_MEMORYTYPE_HOST;
    c3b.dstHost = HOSTBUF;
    c3b.WidthInBytes = 32;
    c3b.Height = 2;
    c3b.Depth = 3;
    OK(cuMemcpy3DAsync_v2(&c3b, H(0x7006)));

    /* ---- sets */
    OK(cuMemsetD8_v2(d, 0xab, 100));
    OK(cuMemsetD16_v2(d, 0xbeef, 50));
    OK(cuMemsetD32_v2(d, 0xdeadbeef, 25));
    OK(cuMemsetD8Async(d, 1, 10, H(0x7007)));
    OK(cuMemsetD16Async(d, 2, 10, H(0x7007)));
    OK(cuMemsetD32Async(d, 7, 10, H(0x7007)));
    OK(cuMemsetD2D8_v2(d, 512, 0x11, 100, 4));
    OK(cuMemsetD2D16_v2(d, 512, 0x2222, 100, 4));
    OK(cuMemsetD2D32_v2(d, 512, 0x33333333, 100, 4));
    OK(cuMemsetD2D8Async(d, 256, 0x44, 10, 2, H(0x7008)));
    OK(cuMemsetD2D16Async(d, 256, 0x55, 10, 2, H(0x7008)));
    OK(cuMemsetD2D32Async(d, 256, 0x66, 10, 2, H(0x7008)));

    /* ---- streams, events, synchronisation */
    CUstream s = 0, s2 = 0;
    OK(cuStreamCreate(&s, 0x1));
    OK(cuStreamCreateWithPriority(&s2, 0x1, -2));
    CUevent e1 = 0, e2 = 0;
    OK(cuEventCreate(&e1, 0x0));
    OK(cuEventCreate(&e2, 0x2));
    OK(cuEventRecord(e1, s));
    OK(cuEventRecord_ptsz(e1, s2));
    OK(cuEventRecordWithFlags(e2, s, 0x1));
    OK(cuStreamWaitEvent(s2, e2, 0x0));
    OK(cuStreamQuery(s));
    CHECK(cuStreamQuery(H(0xbad)), CUDA_ERROR_NOT_READY);
    OK(cuStreamSynchronize(s));
    OK(cuStreamSynchronize_ptsz(s2));
    OK(cuEventQuery(e2));
    OK(cuEventSynchronize(e2));
    float ms = 0;
    OK(cuEventElapsedTime(&ms, e1, e2));
    EXPECT(ms == 1.5f);
    OK(cuEventElapsedTime_v2(&ms, e1, e2));
    EXPECT(ms == 2.25f);
    OK(cuEventDestroy_v2(e1));
    OK(cuEventDestroy_v2(e2));
    OK(cuStreamDestroy_v2(s));
    OK(cuStreamDestroy_v2(s2));

    /* ---- teardown */
    OK(cuMemUnmap(va, 2 << 20));
    OK(cuMemRelease(handle));
    OK(cuMemAddressFree(va, 4 << 20));
    OK(cuMemFreeAsync(da, H(0x5006)));
    OK(cuMemFree_v2(d2));
    OK(cuMemFree_v2(d));
    OK(cuMemFree_v2(dp));
    OK(cuMemFreeHost(hp));
    OK(cuMemFreeHost(hp2));
    OK(cuMemHostUnregister(HOSTREG));
    OK(cuModuleUnload(mod2));
    OK(cuLibraryUnload(lib2));
    OK(cuCtxDestroy_v2(ctx4));
    versioned_calls_all(ctx, ctx3, dm);
    return 0;
}

/* ======================================================================== */
/* process trees                                                            */
/* ======================================================================== */

static int wait_ok(pid_t pid) {
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "driver: child %d failed (status %#x)\n", pid, st);
        return 1;
    }
    return 0;
}

static int scenario_grandchild(void) {
    OK(cuInit(0x77));
    CUdeviceptr p = 0;
    OK(cuMemAlloc_v2(&p, 4096));
    EXPECT(p == 0x7f0000000000ULL);
    return 0;
}

static int scenario_fork(void) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        perror("driver: readlink /proc/self/exe");
        return 1;
    }
    self[n] = 0;
    OK(cuInit(0x1));
    fflush(0);
    pid_t child = fork();
    if (child < 0) {
        perror("driver: fork");
        return 1;
    }
    if (child == 0) {
        OK(cuInit(0x2));
        pid_t grandchild = fork();
        if (grandchild < 0) {
            perror("driver: fork");
            _exit(1);
        }
        if (grandchild == 0) {
            execl(self, self, "grandchild", (char *)0);
            perror("driver: exec");
            _exit(1);
        }
        _exit(wait_ok(grandchild) || failures);
    }
    return wait_ok(child);
}

/* ======================================================================== */
/* volume, threads, signals                                                 */
/* ======================================================================== */

static int scenario_loop(long n) {
    for (long i = 0; i < n; i++)
        cuCtxSetCurrent(H(i));
    return 0;
}

struct thread_arg {
    long index, n;
};

static void *thread_main(void *p) {
    struct thread_arg *t = p;
    for (long i = 0; i < t->n; i++)
        cuCtxSetCurrent(H(0x100000 * (t->index + 1) + i));
    return 0;
}

static int scenario_threads(long nthreads, long n) {
    pthread_t th[64];
    struct thread_arg args[64];
    if (nthreads < 1 || nthreads > 64)
        return 1;
    for (long t = 0; t < nthreads; t++) {
        args[t].index = t;
        args[t].n = n;
        if (pthread_create(&th[t], 0, thread_main, &args[t]) != 0) {
            perror("driver: pthread_create");
            return 1;
        }
    }
    for (long t = 0; t < nthreads; t++)
        pthread_join(th[t], 0);
    return 0;
}

static int scenario_sleep_loop(void) {
    struct timespec ms = {0, 1000 * 1000};
    for (;;) {
        cuStreamQuery(H(0x5000));
        nanosleep(&ms, 0);
    }
    return 0;
}

static void *blocked_sync(void *p) {
    (void)p;
    cuStreamSynchronize(H(0x5100)); /* sleeps $FAKECUDA_SYNC_US */
    return 0;
}

static int scenario_crash(void) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    OK(cuInit(0x5));
    CUdeviceptr p = 0;
    OK(cuMemAlloc_v2(&p, 4096));
    OK(cuCtxSynchronize());
    pthread_t th;
    if (pthread_create(&th, 0, blocked_sync, 0) != 0) {
        perror("driver: pthread_create");
        return 1;
    }
    struct timespec wait = {0, 300 * 1000 * 1000};
    nanosleep(&wait, 0);
    raise(SIGSEGV);
    return 1;
}

static int scenario_dirty(void) {
    /* A caller may leave anything in bits 32..63 of a register carrying a
     * 32-bit argument; the callee only looks at the low half. Call through
     * pointers typed with 64-bit parameters to put garbage there. */
    CUresult (*init64)(unsigned long long) = (CUresult(*)(unsigned long long))(void (*)(void))cuInit;
    OK(init64(0xdeadbeef00000077ULL));
    CUresult (*create64)(CUstream *, unsigned long long) = (CUresult(*)(CUstream *, unsigned long long))(void (*)(void))cuStreamCreate;
    CUstream s = 0;
    OK(create64(&s, 0xfeedface00000001ULL));
    EXPECT(s == H(0xb0001));
    CUresult (*attr64)(int *, unsigned long long, unsigned long long) =
        (CUresult(*)(int *, unsigned long long, unsigned long long))(void (*)(void))cuDeviceGetAttribute;
    int v = 0;
    OK(attr64(&v, 0xabcdef0000000010ULL, 0x1234567800000001ULL));
    EXPECT(v == 161);
    return 0;
}

static int scenario_longname(long n) {
    char *name = malloc((size_t)n + 1);
    if (!name)
        return 1;
    long_name(name, (size_t)n);
    CUfunction f = 0;
    OK(cuModuleGetFunction(&f, H(0x30001), name));
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0));
    free(name);
    return 0;
}

static int scenario_coldstr(void) {
    /* Three pages of a fresh file: a kernel name at the start of page 0, a
     * module path at the start of page 2. Mapped, never touched here. */
    char path[] = "/tmp/fakecuda-coldstr-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("driver: mkstemp");
        return 1;
    }
    unlink(path);
    long page = sysconf(_SC_PAGESIZE);
    static const char kernel[] = "cold_kernel";
    static const char module[] = "/cold/module/path.cubin";
    if (ftruncate(fd, 3 * page) != 0 || pwrite(fd, kernel, sizeof kernel, 0) != (ssize_t)sizeof kernel ||
        pwrite(fd, module, sizeof module, 2 * page) != (ssize_t)sizeof module) {
        perror("driver: writing the string file");
        return 1;
    }
    char *m = mmap(0, (size_t)(3 * page), PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
        perror("driver: mmap");
        return 1;
    }
    CUmodule mod = 0;
    OK(cuModuleLoad(&mod, m + 2 * page));
    CUfunction f = 0;
    OK(cuModuleGetFunction(&f, mod, m));
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0));
    munmap(m, (size_t)(3 * page));
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    const char *s = argc > 1 ? argv[1] : "";
    int rc;
    if (!strcmp(s, "all"))
        rc = scenario_all();
    else if (!strcmp(s, "fork"))
        rc = scenario_fork();
    else if (!strcmp(s, "grandchild"))
        rc = scenario_grandchild();
    else if (!strcmp(s, "loop") && argc > 2)
        rc = scenario_loop(atol(argv[2]));
    else if (!strcmp(s, "threads") && argc > 3)
        rc = scenario_threads(atol(argv[2]), atol(argv[3]));
    else if (!strcmp(s, "sleep_loop"))
        rc = scenario_sleep_loop();
    else if (!strcmp(s, "crash"))
        rc = scenario_crash();
    else if (!strcmp(s, "dirty"))
        rc = scenario_dirty();
    else if (!strcmp(s, "longname") && argc > 2)
        rc = scenario_longname(atol(argv[2]));
    else if (!strcmp(s, "coldstr"))
        rc = scenario_coldstr();
    else {
        fprintf(stderr, "usage: driver all|fork|grandchild|loop N|threads T N|sleep_loop|crash|dirty|longname N|coldstr\n");
        return 2;
    }
    return rc || failures ? 1 : 0;
}
