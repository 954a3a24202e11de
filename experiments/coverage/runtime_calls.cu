// Coverage workload (issue 29): a CUDA C++ program through the runtime API, whose driver
// calls the CUDA 13 runtime makes through cuGetProcAddress entry points. It uses
// cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, cudaMallocAsync,
// cudaMemcpyBatchAsync and cudaMemPrefetchAsync, and checks its results.
// Build: nvcc -O2 -o runtime_calls runtime_calls.cu
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(1);                                                               \
        }                                                                                       \
    } while (0)

__global__ void scale(float *x, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a + 1.0f;
}

int main() {
    const int n = 1 << 20, iters = 50;
    const size_t bytes = n * sizeof(float);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float *h = nullptr, *d = nullptr, *d2 = nullptr, *m = nullptr;
    CK(cudaMallocHost(&h, bytes));
    for (int i = 0; i < n; i++) h[i] = 1.0f;
    CK(cudaMallocAsync(&d, bytes, s));
    CK(cudaMallocAsync(&d2, bytes, s));
    CK(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s));
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < iters; i++) {
        scale<<<(n + 255) / 256, 256, 0, s>>>(d, n, 1.0f);
        CK(cudaGetLastError());
        if (i % 10 == 9) CK(cudaStreamSynchronize(s));
    }
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));

    // Batch copy: d -> d2 and d2 -> h in one call (stream-ordered sources).
    void *dsts[2] = {d2, h};
    void *srcs[2] = {d, d2};
    size_t sizes[2] = {bytes, bytes};
    cudaMemcpyAttributes attr = {};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t idx = 0;
    CK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, &idx, 1, s));
    CK(cudaMemcpyBatchAsync(dsts + 1, srcs + 1, sizes + 1, 1, &attr, &idx, 1, s));
    CK(cudaStreamSynchronize(s));

    // Managed memory, prefetched to the GPU and back (small: 4 MiB).
    CK(cudaMallocManaged(&m, bytes));
    for (int i = 0; i < n; i++) m[i] = 2.0f;
    cudaMemLocation gpu = {};
    gpu.type = cudaMemLocationTypeDevice;
    gpu.id = 0;
    CK(cudaMemPrefetchAsync(m, bytes, gpu, 0, s));
    scale<<<(n + 255) / 256, 256, 0, s>>>(m, n, 2.0f);
    CK(cudaGetLastError());
    cudaMemLocation host = {};
    host.type = cudaMemLocationTypeHost;
    CK(cudaMemPrefetchAsync(m, bytes, host, 0, s));
    CK(cudaDeviceSynchronize());

    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (h[i] != 1.0f + iters) bad++;
        if (m[i] != 5.0f) bad++;
    }
    CK(cudaFreeAsync(d, s));
    CK(cudaFreeAsync(d2, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaFree(m));
    CK(cudaFreeHost(h));
    CK(cudaDeviceSynchronize());
    std::printf("runtime_calls: %d iterations in %.3f ms, %d wrong values\n", iters, ms, bad);
    return bad != 0;
}
