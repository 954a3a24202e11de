// A chain of NODES kernels captured into a CUDA graph through the CUDA
// runtime (as PyTorch captures), launched LAUNCHES times back to back, each
// launch timed with CUDA events: prints the median per launch.
// usage: graph_chain_rt NODES LAUNCHES STREAM(legacy|created) FLAGS [big]
// (big: the kernel takes a 1 KiB parameter struct, as PyTorch's
// TensorIterator kernels take hundreds of bytes)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
extern "C" __global__ void axpb(float *x, int n, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i] + b;
}
// elements per kernel: small, so that the graph's span is mostly its nodes' launch and gaps
#define N_ELEMS (1 << 14)
struct Big { float *x; int n; float a, b; char pad[1000]; };
extern "C" __global__ void axpb_big(Big p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.x[i] = p.a * p.x[i] + p.b + p.pad[i & 511];
}
#define CK(x) do { cudaError_t ck_ = (x); if (ck_) { printf("%s: %s\n", #x, cudaGetErrorString(ck_)); exit(1); } } while (0)
int main(int argc, char **argv) {
    int nodes = atoi(argv[1]), launches = atoi(argv[2]);
    bool legacy = !strcmp(argv[3], "legacy");
    unsigned flags = strtoul(argv[4], 0, 0);
    int n = N_ELEMS;
    float *x; CK(cudaMalloc(&x, n * 4)); CK(cudaMemset(x, 0, n * 4));
    cudaStream_t cap; CK(cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking));
    cudaGraph_t g; cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(cap, cudaStreamCaptureModeGlobal));
    bool big = argc > 5 && !strcmp(argv[5], "big");
    Big p = {x, n, 1.0f, 1e-7f, {}};
    for (int k = 0; k < nodes; k++) {
        if (big) axpb_big<<<(n + 255) / 256, 256, 0, cap>>>(p);
        else axpb<<<(n + 255) / 256, 256, 0, cap>>>(x, n, 1.0f, 1e-7f);
    }
    CK(cudaStreamEndCapture(cap, &g));
    CK(cudaGraphInstantiateWithFlags(&ge, g, flags));
    cudaStream_t s = legacy ? (cudaStream_t)0 : cap;
    for (int w = 0; w < 3; w++) CK(cudaGraphLaunch(ge, s));
    CK(cudaDeviceSynchronize());
    std::vector<cudaEvent_t> ev(launches + 1);
    for (auto &e : ev) CK(cudaEventCreate(&e));
    for (int i = 0; i < launches; i++) { CK(cudaEventRecord(ev[i], s)); CK(cudaGraphLaunch(ge, s)); }
    CK(cudaEventRecord(ev[launches], s));
    CK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int i = 0; i < launches; i++) { float ms; CK(cudaEventElapsedTime(&ms, ev[i], ev[i + 1])); t.push_back(ms * 1e3f); }
    std::sort(t.begin(), t.end());
    printf("runtime  stream=%s flags=%#x%s: median %.1f us per launch of %d nodes (min %.1f)\n",
           argv[3], flags, big ? " 1 KiB parameters" : "", t[t.size() / 2], nodes, t[0]);
}
