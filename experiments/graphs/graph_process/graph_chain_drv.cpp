// The same chain as graph_chain_rt.cu through the driver API only (no CUDA
// runtime in the process unless preloaded), as replay does: the kernel from
// a cubin by cuLibraryLoadFromFile + cuLibraryGetKernel, the primary
// context, capture of cuLaunchKernel with one `extra` parameter buffer.
// usage: graph_chain_drv CUBIN NODES LAUNCHES STREAM(legacy|created) FLAGS [params]
// (params: each parameter by pointer, kernelParams, instead of `extra`)
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
// elements per kernel: small, so that the graph's span is mostly its nodes' launch and gaps
#define N_ELEMS (1 << 14)
#define CK(x) do { CUresult ck_ = (x); if (ck_) { const char *s_; cuGetErrorName(ck_, &s_); printf("%s: %s\n", #x, s_); exit(1); } } while (0)
int main(int argc, char **argv) {
    int nodes = atoi(argv[2]), launches = atoi(argv[3]);
    bool legacy = !strcmp(argv[4], "legacy");
    unsigned flags = strtoul(argv[5], 0, 0);
    CK(cuInit(0));
    CUdevice dev; CK(cuDeviceGet(&dev, 0));
    CUcontext ctx; CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
    CUlibrary lib; CK(cuLibraryLoadFromFile(&lib, argv[1], 0, 0, 0, 0, 0, 0));
    CUkernel k; CK(cuLibraryGetKernel(&k, lib, "axpb"));
    int n = N_ELEMS;
    CUdeviceptr x; CK(cuMemAlloc(&x, n * 4)); CK(cuMemsetD8(x, 0, n * 4));
    CUstream cap; CK(cuStreamCreate(&cap, CU_STREAM_NON_BLOCKING));
    struct __attribute__((packed)) { CUdeviceptr x; int n; float a, b; } p = {x, n, 1.0f, 1e-7f};
    size_t psz = 20; // the kernel's parameters: 8 + 4 + 4 + 4 bytes (the struct pads to 24)
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &p, CU_LAUNCH_PARAM_BUFFER_SIZE, &psz, CU_LAUNCH_PARAM_END};
    CUgraph g; CUgraphExec ge;
    CK(cuStreamBeginCapture(cap, CU_STREAM_CAPTURE_MODE_GLOBAL));
    bool by_pointer = argc > 6 && !strcmp(argv[6], "params");
    void *params[] = {&p.x, &p.n, &p.a, &p.b};
    for (int i = 0; i < nodes; i++)
        CK(cuLaunchKernel((CUfunction)k, (n + 255) / 256, 1, 1, 256, 1, 1, 0, cap, by_pointer ? params : 0,
                          by_pointer ? 0 : extra));
    CK(cuStreamEndCapture(cap, &g));
    CK(cuGraphInstantiateWithFlags(&ge, g, flags));
    CUstream s = legacy ? CU_STREAM_LEGACY : cap;
    for (int w = 0; w < 3; w++) CK(cuGraphLaunch(ge, s));
    CK(cuCtxSynchronize());
    std::vector<CUevent> ev(launches + 1);
    for (auto &e : ev) CK(cuEventCreate(&e, 0));
    for (int i = 0; i < launches; i++) { CK(cuEventRecord(ev[i], s)); CK(cuGraphLaunch(ge, s)); }
    CK(cuEventRecord(ev[launches], s));
    CK(cuCtxSynchronize());
    std::vector<float> t;
    for (int i = 0; i < launches; i++) { float ms; CK(cuEventElapsedTime(&ms, ev[i], ev[i + 1])); t.push_back(ms * 1e3f); }
    std::sort(t.begin(), t.end());
    printf("driver   stream=%s flags=%#x%s%s: median %.1f us per launch of %d nodes (min %.1f)\n", argv[4], flags, by_pointer ? " kernelParams" : " extra",
           getenv("LD_PRELOAD") ? " (runtime preloaded)" : "", t[t.size() / 2], nodes, t[0]);
}
