/*
 * A fake libcuda.so.1 for tracer's integration tests.
 *
 * Exports every function of tracer-common's FUNCS table (plus the _ptsz /
 * _ptds variants real drivers export for a few of them) with cuda.h's
 * signatures. Bodies are trivial and deterministic: out-parameters get values
 * derived from the inputs, so a test can predict every value in a trace.
 * The fake never dereferences host pointers it is given except the structs
 * and out-parameters cuda.h says it reads or writes.
 *
 * Build (the flags matter, see below):
 *   cc -O0 -fno-omit-frame-pointer -fcf-protection=none -fPIC -shared \
 *      -Wl,-soname,libcuda.so.1 -o libcuda.so.1 fakecuda.c
 *
 * -O0 -fno-omit-frame-pointer -fcf-protection=none makes every function start
 * with `push %rbp` like real libcuda's (no endbr64): uprobes on that
 * instruction are emulated, others are single-stepped (about 10x slower).
 *
 * Values returned (the tests in ../root_uprobes.rs rely on them):
 *   cuDriverGetVersion        13000
 *   cuGetExportTable          0xe0000000
 *   cuGetProcAddress_v2       the entry point a real driver hands out for (symbol, version,
 *                             flags), see fake_proc_address(); unknown symbol:
 *                             CUDA_ERROR_NOT_FOUND, pfn NULL, *symbolStatus 1
 *   cuDeviceGet               ordinal
 *   cuDeviceGetCount          2
 *   cuDeviceTotalMem_v2       80 GiB
 *   cuDeviceGetAttribute      attrib * 10 + dev
 *   cuDeviceGetDefaultMemPool 0xd000 + dev
 *   cuDeviceCanAccessPeer     dev != peerDev
 *   cuDevicePrimaryCtxRetain  0xc7000 + dev
 *   cuDevicePrimaryCtxGetState flags 9, active 1
 *   cuCtxCreate_v2/_v3/_v4    0xc2000 / 0xc3000 / 0xc4000 + dev
 *   cuCtxGetCurrent           the context last set (SetCurrent/PushCurrent)
 *   cuCtxPopCurrent_v2        the context last pushed
 *   cuCtxGetDevice            3
 *   cuCtxGetStreamPriorityRange 0, -5
 *   cuModuleLoad/Data/DataEx/FatBinary 0x30001 / 2 / 3 / 4
 *   cuModuleGetFunction       0x4000 + strlen(name), unique per (hmod, name)
 *                             in a process: a pair asks again, it gets the
 *                             same handle; a new pair whose 0x4000 + strlen
 *                             is taken gets 0x48000 + 0x10 * k instead (k:
 *                             such collisions so far in this process, in
 *                             call order); see named_handle()
 *   cuModuleGetGlobal_v2      0x7e0000000000 + strlen(name), 256 bytes
 *   cuLibraryLoadData/FromFile 0x50001 / 0x50002
 *   cuLibraryGetKernel        0x60000 + strlen(name), unique per (library,
 *                             name) the same way (collisions: 0x68000 + 0x10 * k)
 *   cuLibraryGetModule        0x30010
 *   cuLibraryGetGlobal        0x7d0000000000 + strlen(name), 512 bytes
 *   cuKernelGetFunction       kernel + 0x10000
 *   cuKernelGetAttribute      attrib + 100
 *   cuFuncGetAttribute        attrib + 200
 *   cuFuncGetName             pointer to "fake_function_name"
 *   cuOccupancyMaxActiveBlocks* blockSize / 32
 *   cuGraphInstantiateWithFlags/WithParams 0x80001 / 0x80002 + 0x10 * n (n:
 *                             that function's calls so far)
 *   cuStreamEndCapture        0x90001 + 0x10 * n (n: its calls so far)
 *   graph construction        see fakegraph.c
 *   cuStreamIsCapturing       1
 *   cuMemAlloc_v2             0x7f0000000000 + n * 0x100000 (n: successful
 *                             calls before this one in this process);
 *                             bytesize > 1 TiB: CUDA_ERROR_OUT_OF_MEMORY,
 *                             nothing written
 *   cuMemAllocPitch_v2        0x7f1000000000, pitch = width rounded up to 512
 *   cuMemAllocManaged         0x7f2000000000
 *   cuMemAllocAsync           0x7f3000000000
 *   cuMemAllocFromPoolAsync   0x7f4000000000
 *   cuMemAllocHost_v2         0x7e1000000000 (fake: never touch it)
 *   cuMemHostAlloc            0x7e2000000000 (fake: never touch it)
 *   cuMemCreate               0xa0000 + prop->location.id
 *   cuMemAddressReserve       addr, or 0x7f5000000000 when addr is 0
 *   cuMemGetInfo_v2           70 GiB free, 80 GiB total
 *   cuMemGetAddressRange_v2   dptr rounded down to 1 MiB, 1 MiB
 *   cuMemHostGetDevicePointer_v2 p
 *   cuPointerGetAttribute     writes int 2 (device memory)
 *   cuStreamCreate            0xb0000 + Flags
 *   cuStreamCreateWithPriority 0xb1000 + flags
 *   cuStreamQuery             CUDA_ERROR_NOT_READY for stream 0xbad, else 0
 *   cuStreamSynchronize(_ptsz) sleeps $FAKECUDA_SYNC_US microseconds (0 if unset)
 *   cuEventCreate             0xee000 + Flags
 *   cuEventElapsedTime        1.5
 *   cuEventElapsedTime_v2     2.25
 * Everything else returns CUDA_SUCCESS and writes nothing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakecuda.h"

/* Exported, never inlined, and each body touches this counter so nothing is folded. */
#define API __attribute__((noinline, used, visibility("default")))

static volatile unsigned long fake_calls;
static volatile unsigned long fake_sink;

#define H(v) ((void *)(uintptr_t)(v))

/* ======================================================================== */
/* initialisation and devices                                               */
/* ======================================================================== */

API CUresult cuInit(unsigned int Flags) {
    fake_calls++;
    fake_sink = Flags;
    return CUDA_SUCCESS;
}

API CUresult cuDriverGetVersion(int *driverVersion) {
    fake_calls++;
    *driverVersion = 13000;
    return CUDA_SUCCESS;
}

API CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId) {
    fake_calls++;
    fake_sink = (unsigned char)pExportTableId->bytes[0];
    *ppExportTable = H(0xe0000000);
    return CUDA_SUCCESS;
}

static void *fake_proc_address(const char *symbol, int cudaVersion, cuuint64_t flags);

API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult *symbolStatus) {
    fake_calls++;
    fake_sink = strlen(symbol) + cudaVersion + flags;
    *pfn = fake_proc_address(symbol, cudaVersion, flags);
    if (symbolStatus)
        *symbolStatus = *pfn ? 0 : 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
    return *pfn ? CUDA_SUCCESS : 500; /* CUDA_ERROR_NOT_FOUND */
}

API CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    fake_calls++;
    *device = ordinal;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetCount(int *count) {
    fake_calls++;
    *count = 2;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    fake_calls++;
    fake_sink = dev;
    if (len > 0) {
        strncpy(name, "Fake GPU", (size_t)len);
        name[len - 1] = 0;
    }
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
    fake_calls++;
    for (int i = 0; i < 16; i++)
        uuid->bytes[i] = (char)(0xa0 + i + dev);
    return CUDA_SUCCESS;
}

API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    fake_calls++;
    fake_sink = dev;
    *bytes = 80ULL << 30;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
    fake_calls++;
    *pi = attrib * 10 + dev;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev) {
    fake_calls++;
    *pool_out = H(0xd000 + dev);
    return CUDA_SUCCESS;
}

API CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev) {
    fake_calls++;
    *canAccessPeer = dev != peerDev;
    return CUDA_SUCCESS;
}

/* ---- primary contexts */

API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    fake_calls++;
    *pctx = H(0xc7000 + dev);
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    fake_calls++;
    fake_sink = dev;
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
    fake_calls++;
    fake_sink = dev;
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
    fake_calls++;
    fake_sink = dev + flags;
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
    fake_calls++;
    fake_sink = dev;
    *flags = 9;
    *active = 1;
    return CUDA_SUCCESS;
}

/* ======================================================================== */
/* contexts                                                                 */
/* ======================================================================== */

static CUcontext current_ctx;
static CUcontext pushed_ctx;

API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
    fake_calls++;
    fake_sink = flags;
    *pctx = H(0xc2000 + dev);
    return CUDA_SUCCESS;
}

API CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags,
                            CUdevice dev) {
    fake_calls++;
    fake_sink = (uintptr_t)paramsArray + numParams + flags;
    *pctx = H(0xc3000 + dev);
    return CUDA_SUCCESS;
}

API CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev) {
    fake_calls++;
    fake_sink = (uintptr_t)ctxCreateParams + flags;
    *pctx = H(0xc4000 + dev);
    return CUDA_SUCCESS;
}

API CUresult cuCtxDestroy_v2(CUcontext ctx) {
    fake_calls++;
    fake_sink = (uintptr_t)ctx;
    return CUDA_SUCCESS;
}

API CUresult cuCtxSetCurrent(CUcontext ctx) {
    fake_calls++;
    current_ctx = ctx;
    return CUDA_SUCCESS;
}

API CUresult cuCtxGetCurrent(CUcontext *pctx) {
    fake_calls++;
    *pctx = current_ctx;
    return CUDA_SUCCESS;
}

API CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    fake_calls++;
    pushed_ctx = ctx;
    return CUDA_SUCCESS;
}

API CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
    fake_calls++;
    if (pctx)
        *pctx = pushed_ctx;
    pushed_ctx = 0;
    return CUDA_SUCCESS;
}

API CUresult cuCtxGetDevice(CUdevice *device) {
    fake_calls++;
    *device = 3;
    return CUDA_SUCCESS;
}

API CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
    fake_calls++;
    fake_sink = limit + value;
    return CUDA_SUCCESS;
}

API CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority) {
    fake_calls++;
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

API CUresult cuCtxSynchronize(void) {
    fake_calls++;
    return CUDA_SUCCESS;
}

/* ======================================================================== */
/* modules, libraries, functions                                            */
/* ======================================================================== */

/*
 * Function and kernel handles, unique per (module or library, name) in a
 * process. The first pair asking for a given strlen(name) gets the value the
 * tests have always relied on (base + strlen(name)); the same pair asking
 * again gets the same handle; another pair whose base + strlen(name) is taken
 * gets fallback + 0x10 * k (k: collisions of that kind so far). Two kernels
 * whose names have the same length thus get two handles, as with a real
 * driver. At most NAMED_MAX pairs are remembered; past that (or if strdup
 * fails) a lookup returns base + strlen(name) as before. With NAMED_MAX 2048
 * the fallback ranges stay below 0x50000 and 0x70000, clear of the other
 * handles (libraries 0x5000x, cuKernelGetFunction's kernel + 0x10000).
 */
#define NAMED_MAX 2048
enum { NAMED_FUNCTION, NAMED_KERNEL, NAMED_KINDS };

struct named {
    int kind;
    uintptr_t owner;
    char *name;
    uintptr_t handle;
};

static struct named named_tab[NAMED_MAX];
static unsigned named_len;
static unsigned named_collisions[NAMED_KINDS];
static char named_lock;

static uintptr_t named_handle(int kind, uintptr_t owner, const char *name, uintptr_t base, uintptr_t fallback) {
    uintptr_t want = base + strlen(name);
    while (__atomic_test_and_set(&named_lock, __ATOMIC_ACQUIRE))
        ;
    uintptr_t h = 0;
    int taken = 0;
    for (unsigned i = 0; i < named_len && !h; i++) {
        struct named *e = &named_tab[i];
        if (e->kind != kind)
            continue;
        if (e->owner == owner && !strcmp(e->name, name))
            h = e->handle;
        else if (e->handle == want)
            taken = 1;
    }
    if (!h) {
        char *copy = named_len < NAMED_MAX ? strdup(name) : 0;
        if (!copy) {
            h = want;
        } else {
            h = taken ? fallback + 0x10 * (uintptr_t)named_collisions[kind]++ : want;
            named_tab[named_len++] = (struct named){kind, owner, copy, h};
        }
    }
    __atomic_clear(&named_lock, __ATOMIC_RELEASE);
    return h;
}

API CUresult cuModuleLoad(CUmodule *module, const char *fname) {
    fake_calls++;
    fake_sink = strlen(fname);
    *module = H(0x30001);
    return CUDA_SUCCESS;
}

API CUresult cuModuleLoadData(CUmodule *module, const void *image) {
    fake_calls++;
    fake_sink = (uintptr_t)image;
    *module = H(0x30002);
    return CUDA_SUCCESS;
}

API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions, CUjit_option *options,
                                void **optionValues) {
    fake_calls++;
    fake_sink = (uintptr_t)image + numOptions + (uintptr_t)options + (uintptr_t)optionValues;
    *module = H(0x30003);
    return CUDA_SUCCESS;
}

API CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin) {
    fake_calls++;
    fake_sink = (uintptr_t)fatCubin;
    *module = H(0x30004);
    return CUDA_SUCCESS;
}

API CUresult cuModuleUnload(CUmodule hmod) {
    fake_calls++;
    fake_sink = (uintptr_t)hmod;
    return CUDA_SUCCESS;
}

API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
    fake_calls++;
    fake_sink = (uintptr_t)hmod;
    *hfunc = H(named_handle(NAMED_FUNCTION, (uintptr_t)hmod, name, 0x4000, 0x48000));
    return CUDA_SUCCESS;
}

API CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name) {
    fake_calls++;
    fake_sink = (uintptr_t)hmod;
    if (dptr)
        *dptr = 0x7e0000000000ULL + strlen(name);
    if (bytes)
        *bytes = 256;
    return CUDA_SUCCESS;
}

API CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                               void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                               void **libraryOptionValues, unsigned int numLibraryOptions) {
    fake_calls++;
    fake_sink = (uintptr_t)code + (uintptr_t)jitOptions + (uintptr_t)jitOptionsValues + numJitOptions +
                (uintptr_t)libraryOptions + (uintptr_t)libraryOptionValues + numLibraryOptions;
    *library = H(0x50001);
    return CUDA_SUCCESS;
}

API CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                                   void **jitOptionsValues, unsigned int numJitOptions,
                                   CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                   unsigned int numLibraryOptions) {
    fake_calls++;
    fake_sink = strlen(fileName) + (uintptr_t)jitOptions + (uintptr_t)jitOptionsValues + numJitOptions +
                (uintptr_t)libraryOptions + (uintptr_t)libraryOptionValues + numLibraryOptions;
    *library = H(0x50002);
    return CUDA_SUCCESS;
}

API CUresult cuLibraryUnload(CUlibrary library) {
    fake_calls++;
    fake_sink = (uintptr_t)library;
    return CUDA_SUCCESS;
}

API CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
    fake_calls++;
    fake_sink = (uintptr_t)library;
    *pKernel = H(named_handle(NAMED_KERNEL, (uintptr_t)library, name, 0x60000, 0x68000));
    return CUDA_SUCCESS;
}

API CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library) {
    fake_calls++;
    fake_sink = (uintptr_t)library;
    *pMod = H(0x30010);
    return CUDA_SUCCESS;
}

API CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name) {
    fake_calls++;
    fake_sink = (uintptr_t)library;
    if (dptr)
        *dptr = 0x7d0000000000ULL + strlen(name);
    if (bytes)
        *bytes = 512;
    return CUDA_SUCCESS;
}

API CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
    fake_calls++;
    *pFunc = H((uintptr_t)kernel + 0x10000);
    return CUDA_SUCCESS;
}

API CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev) {
    fake_calls++;
    fake_sink = (uintptr_t)kernel + dev;
    *pi = attrib + 100;
    return CUDA_SUCCESS;
}

API CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev) {
    fake_calls++;
    fake_sink = attrib + val + (uintptr_t)kernel + dev;
    return CUDA_SUCCESS;
}

API CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc) {
    fake_calls++;
    fake_sink = (uintptr_t)hfunc;
    *pi = attrib + 200;
    return CUDA_SUCCESS;
}

API CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
    fake_calls++;
    fake_sink = (uintptr_t)hfunc + attrib + value;
    return CUDA_SUCCESS;
}

API CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
    fake_calls++;
    fake_sink = (uintptr_t)hfunc + config;
    return CUDA_SUCCESS;
}

API CUresult cuFuncGetName(const char **name, CUfunction hfunc) {
    fake_calls++;
    fake_sink = (uintptr_t)hfunc;
    *name = "fake_function_name";
    return CUDA_SUCCESS;
}

API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                                         size_t dynamicSMemSize) {
    fake_calls++;
    fake_sink = (uintptr_t)func + dynamicSMemSize;
    *numBlocks = blockSize / 32;
    return CUDA_SUCCESS;
}

API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func, int blockSize,
                                                                  size_t dynamicSMemSize, unsigned int flags) {
    fake_calls++;
    fake_sink = (uintptr_t)func + dynamicSMemSize + flags;
    *numBlocks = blockSize / 32;
    return CUDA_SUCCESS;
}

/* ======================================================================== */
/* launches and graphs                                                      */
/* ======================================================================== */

static CUresult launch(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                       unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params,
                       void **extra) {
    fake_sink = (uintptr_t)f + gx + gy + gz + bx + by + bz + shmem + (uintptr_t)s + (uintptr_t)params +
                (uintptr_t)extra;
    return CUDA_SUCCESS;
}

API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                            unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                            unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra) {
    fake_calls++;
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, extra);
}

API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                 unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                 unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra) {
    fake_calls++;
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, extra);
}

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra) {
    unsigned long s = 0;
    for (unsigned int i = 0; i < config->numAttrs; i++)
        s += (unsigned long)config->attrs[i].id;
    fake_sink = s;
    return launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
                  config->blockDimZ, config->sharedMemBytes, config->hStream, kernelParams, extra);
}

API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra) {
    fake_calls++;
    return launch_ex(config, f, kernelParams, extra);
}

API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra) {
    fake_calls++;
    return launch_ex(config, f, kernelParams, extra);
}

API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                       unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                       unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                       void **kernelParams) {
    fake_calls++;
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, 0);
}

API CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData) {
    /* The real driver runs fn later on its own thread; the fake never does. */
    fake_calls++;
    fake_sink = (uintptr_t)hStream + (uintptr_t)fn + (uintptr_t)userData;
    return CUDA_SUCCESS;
}

API CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)hGraphExec + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

API CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags) {
    fake_calls++;
    fake_sink = (uintptr_t)hGraph + flags;
    static unsigned long n;
    *phGraphExec = H(0x80001 + 0x10 * n++);
    return CUDA_SUCCESS;
}

API CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                          CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams) {
    fake_calls++;
    fake_sink = (uintptr_t)hGraph + (uintptr_t)instantiateParams;
    static unsigned long n;
    *phGraphExec = H(0x80002 + 0x10 * n++);
    return CUDA_SUCCESS;
}

API CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
    fake_calls++;
    fake_sink = (uintptr_t)hGraphExec;
    return CUDA_SUCCESS;
}

API CUresult cuGraphDestroy(CUgraph hGraph) {
    fake_calls++;
    fake_sink = (uintptr_t)hGraph;
    return CUDA_SUCCESS;
}

API CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)hGraphExec + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

API CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
    fake_calls++;
    fake_sink = (uintptr_t)hStream + mode;
    return CUDA_SUCCESS;
}

API CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) {
    fake_calls++;
    fake_sink = (uintptr_t)hStream;
    static unsigned long n;
    *phGraph = H(0x90001 + 0x10 * n++);
    return CUDA_SUCCESS;
}

API CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
    fake_calls++;
    fake_sink = (uintptr_t)hStream;
    *captureStatus = 1;
    return CUDA_SUCCESS;
}

/* ======================================================================== */
/* allocation and freeing                                                   */
/* ======================================================================== */

static unsigned long allocs; /* successful cuMemAlloc_v2 calls so far */

API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    fake_calls++;
    if (bytesize > (1ULL << 40))
        return CUDA_ERROR_OUT_OF_MEMORY;
    *dptr = 0x7f0000000000ULL + allocs * 0x100000ULL;
    allocs++;
    return CUDA_SUCCESS;
}

API CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                unsigned int ElementSizeBytes) {
    fake_calls++;
    fake_sink = Height + ElementSizeBytes;
    *pPitch = (WidthInBytes + 511) / 512 * 512;
    *dptr = 0x7f1000000000ULL;
    return CUDA_SUCCESS;
}

API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
    fake_calls++;
    fake_sink = bytesize + flags;
    *dptr = 0x7f2000000000ULL;
    return CUDA_SUCCESS;
}

API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    fake_calls++;
    fake_sink = bytesize + (uintptr_t)hStream;
    *dptr = 0x7f3000000000ULL;
    return CUDA_SUCCESS;
}

API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
    fake_calls++;
    fake_sink = bytesize + (uintptr_t)pool + (uintptr_t)hStream;
    *dptr = 0x7f4000000000ULL;
    return CUDA_SUCCESS;
}

API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) {
    fake_calls++;
    fake_sink = bytesize;
    *pp = H(0x7e1000000000ULL);
    return CUDA_SUCCESS;
}

API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
    fake_calls++;
    fake_sink = bytesize + Flags;
    *pp = H(0x7e2000000000ULL);
    return CUDA_SUCCESS;
}

API CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags) {
    fake_calls++;
    fake_sink = (uintptr_t)p + bytesize + Flags;
    return CUDA_SUCCESS;
}

API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                         unsigned long long flags) {
    fake_calls++;
    fake_sink = size + flags;
    *handle = 0xa0000ULL + (unsigned)prop->location.id;
    return CUDA_SUCCESS;
}

API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                 unsigned long long flags) {
    fake_calls++;
    fake_sink = size + alignment + flags;
    *ptr = addr ? addr : 0x7f5000000000ULL;
    return CUDA_SUCCESS;
}

API CUresult cuMemFree_v2(CUdeviceptr dptr) {
    fake_calls++;
    fake_sink = dptr;
    return CUDA_SUCCESS;
}

API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
    fake_calls++;
    fake_sink = dptr + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

API CUresult cuMemFreeHost(void *p) {
    fake_calls++;
    fake_sink = (uintptr_t)p;
    return CUDA_SUCCESS;
}

API CUresult cuMemHostUnregister(void *p) {
    fake_calls++;
    fake_sink = (uintptr_t)p;
    return CUDA_SUCCESS;
}

API CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
    fake_calls++;
    fake_sink = handle;
    return CUDA_SUCCESS;
}

API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    fake_calls++;
    fake_sink = ptr + size;
    return CUDA_SUCCESS;
}

/* ======================================================================== */
/* virtual memory, queries, prefetch                                        */
/* ======================================================================== */

API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                      unsigned long long flags) {
    fake_calls++;
    fake_sink = ptr + size + offset + handle + flags;
    return CUDA_SUCCESS;
}

API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
    fake_calls++;
    fake_sink = ptr + size;
    return CUDA_SUCCESS;
}

API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
    fake_calls++;
    fake_sink = ptr + size + (unsigned)desc->flags + count;
    return CUDA_SUCCESS;
}

API CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
    fake_calls++;
    *free = 70ULL << 30;
    *total = 80ULL << 30;
    return CUDA_SUCCESS;
}

API CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr) {
    fake_calls++;
    if (pbase)
        *pbase = dptr & ~0xfffffULL;
    if (psize)
        *psize = 0x100000;
    return CUDA_SUCCESS;
}

API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags) {
    fake_calls++;
    fake_sink = Flags;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

API CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
    fake_calls++;
    fake_sink = attribute + ptr;
    *(int *)data = CU_MEMORYTYPE_DEVICE;
    return CUDA_SUCCESS;
}

API CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                    CUdeviceptr ptr) {
    fake_calls++;
    fake_sink = numAttributes + (uintptr_t)attributes + (uintptr_t)data + ptr;
    return CUDA_SUCCESS;
}

API CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream) {
    fake_calls++;
    fake_sink = devPtr + count + dstDevice + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

/* ======================================================================== */
/* copies (host pointers are never dereferenced)                            */
/* ======================================================================== */

static CUresult copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    fake_sink = dst + src + n + (uintptr_t)s;
    return CUDA_SUCCESS;
}

/* Device-to-host copies write (srcDevice + i) & 0xff to byte i of dstHost
 * when FAKECUDA_D2H_PATTERN=1 (the tests of --capture-data read it back);
 * otherwise they write nothing, as the other tests pass made-up pointers. */
static CUresult copy_d2h(void *dstHost, CUdeviceptr src, size_t n, CUstream s) {
    static int write = -1;
    if (write < 0) {
        const char *e = getenv("FAKECUDA_D2H_PATTERN");
        write = e && e[0] == '1';
    }
    if (write)
        for (size_t i = 0; i < n; i++)
            ((unsigned char *)dstHost)[i] = (unsigned char)(src + i);
    return copy((uintptr_t)dstHost, src, n, s);
}

API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
    fake_calls++;
    return copy(dst, src, ByteCount, 0);
}

API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
    fake_calls++;
    return copy(dst, src, ByteCount, 0);
}

API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
    fake_calls++;
    return copy(dst, src, ByteCount, hStream);
}

API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
    fake_calls++;
    return copy(dst, src, ByteCount, hStream);
}

API CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                          size_t ByteCount) {
    fake_calls++;
    fake_sink = (uintptr_t)dstContext + (uintptr_t)srcContext;
    return copy(dstDevice, srcDevice, ByteCount, 0);
}

API CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                               CUcontext srcContext, size_t ByteCount, CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)dstContext + (uintptr_t)srcContext;
    return copy(dstDevice, srcDevice, ByteCount, hStream);
}

API CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
    fake_calls++;
    return copy(dstDevice, (uintptr_t)srcHost, ByteCount, 0);
}

API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
    fake_calls++;
    return copy(dstDevice, (uintptr_t)srcHost, ByteCount, 0);
}

API CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
    fake_calls++;
    return copy_d2h(dstHost, srcDevice, ByteCount, 0);
}

API CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
    fake_calls++;
    return copy(dstDevice, srcDevice, ByteCount, 0);
}

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream) {
    fake_calls++;
    return copy(dstDevice, (uintptr_t)srcHost, ByteCount, hStream);
}

API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                       CUstream hStream) {
    fake_calls++;
    return copy(dstDevice, (uintptr_t)srcHost, ByteCount, hStream);
}

API CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
    fake_calls++;
    return copy_d2h(dstHost, srcDevice, ByteCount, hStream);
}

API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
    fake_calls++;
    return copy(dstDevice, srcDevice, ByteCount, hStream);
}

static CUresult copy2d(const CUDA_MEMCPY2D *p, CUstream s) {
    return copy(p->dstDevice, p->srcDevice, p->WidthInBytes * p->Height, s);
}

static CUresult copy3d(const CUDA_MEMCPY3D *p, CUstream s) {
    return copy(p->dstDevice, p->srcDevice, p->WidthInBytes * p->Height * p->Depth, s);
}

API CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy) {
    fake_calls++;
    return copy2d(pCopy, 0);
}

API CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy) {
    fake_calls++;
    return copy2d(pCopy, 0);
}

API CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream) {
    fake_calls++;
    return copy2d(pCopy, hStream);
}

API CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy) {
    fake_calls++;
    return copy3d(pCopy, 0);
}

API CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream) {
    fake_calls++;
    return copy3d(pCopy, hStream);
}

/* ======================================================================== */
/* sets                                                                     */
/* ======================================================================== */

static CUresult set(CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s) {
    fake_sink = dst + pitch + v + w * h + (uintptr_t)s;
    return CUDA_SUCCESS;
}

API CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
    fake_calls++;
    return set(dstDevice, 0, uc, N, 1, 0);
}

API CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N) {
    fake_calls++;
    return set(dstDevice, 0, us, N, 1, 0);
}

API CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
    fake_calls++;
    return set(dstDevice, 0, ui, N, 1, 0);
}

API CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
    fake_calls++;
    return set(dstDevice, 0, uc, N, 1, hStream);
}

API CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
    fake_calls++;
    return set(dstDevice, 0, us, N, 1, hStream);
}

API CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
    fake_calls++;
    return set(dstDevice, 0, ui, N, 1, hStream);
}

API CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height) {
    fake_calls++;
    return set(dstDevice, dstPitch, uc, Width, Height, 0);
}

API CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                              size_t Height) {
    fake_calls++;
    return set(dstDevice, dstPitch, us, Width, Height, 0);
}

API CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height) {
    fake_calls++;
    return set(dstDevice, dstPitch, ui, Width, Height, 0);
}

API CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                               size_t Height, CUstream hStream) {
    fake_calls++;
    return set(dstDevice, dstPitch, uc, Width, Height, hStream);
}

API CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                size_t Height, CUstream hStream) {
    fake_calls++;
    return set(dstDevice, dstPitch, us, Width, Height, hStream);
}

API CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                size_t Height, CUstream hStream) {
    fake_calls++;
    return set(dstDevice, dstPitch, ui, Width, Height, hStream);
}

/* ======================================================================== */
/* streams, events, synchronisation                                         */
/* ======================================================================== */

static void sync_sleep(void) {
    const char *s = getenv("FAKECUDA_SYNC_US");
    if (s && *s)
        usleep((useconds_t)strtoul(s, 0, 10));
}

API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) {
    fake_calls++;
    *phStream = H(0xb0000 + Flags);
    return CUDA_SUCCESS;
}

API CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority) {
    fake_calls++;
    fake_sink = (unsigned long)priority;
    *phStream = H(0xb1000 + flags);
    return CUDA_SUCCESS;
}

API CUresult cuStreamDestroy_v2(CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

API CUresult cuStreamSynchronize(CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)hStream;
    sync_sleep();
    return CUDA_SUCCESS;
}

API CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)hStream;
    sync_sleep();
    return CUDA_SUCCESS;
}

API CUresult cuStreamQuery(CUstream hStream) {
    fake_calls++;
    if ((uintptr_t)hStream == 0xbad)
        return CUDA_ERROR_NOT_READY;
    return CUDA_SUCCESS;
}

API CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    fake_calls++;
    fake_sink = (uintptr_t)hStream + (uintptr_t)hEvent + Flags;
    return CUDA_SUCCESS;
}

API CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) {
    fake_calls++;
    *phEvent = H(0xee000 + Flags);
    return CUDA_SUCCESS;
}

API CUresult cuEventDestroy_v2(CUevent hEvent) {
    fake_calls++;
    fake_sink = (uintptr_t)hEvent;
    return CUDA_SUCCESS;
}

API CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)hEvent + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)hEvent + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

API CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
    fake_calls++;
    fake_sink = (uintptr_t)hEvent + (uintptr_t)hStream + flags;
    return CUDA_SUCCESS;
}

API CUresult cuEventQuery(CUevent hEvent) {
    fake_calls++;
    fake_sink = (uintptr_t)hEvent;
    return CUDA_SUCCESS;
}

API CUresult cuEventSynchronize(CUevent hEvent) {
    fake_calls++;
    fake_sink = (uintptr_t)hEvent;
    return CUDA_SUCCESS;
}

API CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
    fake_calls++;
    fake_sink = (uintptr_t)hStart + (uintptr_t)hEnd;
    *pMilliseconds = 1.5f;
    return CUDA_SUCCESS;
}

API CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
    fake_calls++;
    fake_sink = (uintptr_t)hStart + (uintptr_t)hEnd;
    *pMilliseconds = 2.25f;
    return CUDA_SUCCESS;
}

#include "fakegraph.c"
#include "fakeversioned.c"

/* ======================================================================== */
/* cuGetProcAddress                                                         */
/* ======================================================================== */

/*
 * Like a CUDA 12/13 driver, cuGetProcAddress hands out versioned entry points by the
 * caller's CUDA version, and the per-thread-default-stream variant (_ptsz) when flags
 * has CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (2). Programs that reach these only
 * through the pointer never name them: tracer must find out which function it was.
 *
 *   cuFakeUnlistedAsync  exported, in no list of tracer's (counted, not decoded)
 *   cuFakeHidden         a function of the library that no exported symbol names
 */
static const struct {
    const char *symbol;
    int since;
    const char *entry;
} VERSIONED[] = {
    {"cuCtxSynchronize", 13000, "cuCtxSynchronize_v2"},
    {"cuCtxGetDevice", 13000, "cuCtxGetDevice_v2"},
    {"cuEventElapsedTime", 12080, "cuEventElapsedTime_v2"},
    {"cuMemPrefetchAsync", 12020, "cuMemPrefetchAsync_v2"},
    {"cuMemAdvise", 12020, "cuMemAdvise_v2"},
    {"cuMemcpyBatchAsync", 13000, "cuMemcpyBatchAsync_v2"},
    {"cuMemcpy3DBatchAsync", 13000, "cuMemcpy3DBatchAsync_v2"},
    {"cuGraphExecUpdate", 12000, "cuGraphExecUpdate_v2"},
    {"cuStreamGetCaptureInfo", 12030, "cuStreamGetCaptureInfo_v3"},
    {"cuGetProcAddress", 12050, "cuGetProcAddress_v2"},
};

API CUresult cuFakeUnlistedAsync(CUstream hStream, unsigned int flags) {
    fake_calls++;
    fake_sink = (uintptr_t)hStream + flags;
    return CUDA_SUCCESS;
}

__attribute__((noinline, used, visibility("hidden"))) CUresult fake_hidden_entry(CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

static void *own_symbol(const char *name) {
    static void *self;
    if (!self)
        self = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    return self ? dlsym(self, name) : NULL;
}

static void *fake_proc_address(const char *symbol, int cudaVersion, cuuint64_t flags) {
    char base[192], name[192];
    if (strcmp(symbol, "cuFakeHidden") == 0)
        return (void *)&fake_hidden_entry;
    if (strncmp(symbol, "cu", 2) != 0 || strlen(symbol) >= 128)
        return NULL;
    snprintf(base, sizeof base, "%s", symbol);
    int listed = 0;
    for (size_t i = 0; i < sizeof VERSIONED / sizeof VERSIONED[0]; i++)
        if (strcmp(symbol, VERSIONED[i].symbol) == 0) {
            listed = 1;
            if (cudaVersion >= VERSIONED[i].since)
                snprintf(base, sizeof base, "%s", VERSIONED[i].entry);
        }
    /* cuMemAlloc -> cuMemAlloc_v2: the unversioned name is the pre-3.2 ABI. */
    snprintf(name, sizeof name, "%.180s_v2", base);
    if (!listed && own_symbol(name))
        snprintf(base, sizeof base, "%s", name);
    if (flags & 2) {
        void *p;
        snprintf(name, sizeof name, "%.180s_ptsz", base);
        if ((p = own_symbol(name)))
            return p;
        snprintf(name, sizeof name, "%.180s_ptds", base);
        if ((p = own_symbol(name)))
            return p;
    }
    return own_symbol(base);
}
