// LD_PRELOAD shim: the CUDA runtime initializes the device's primary
// context (cudaFree(0)) before the program's main, so a driver-API-only
// process (replay, graph_chain_drv) runs in a context the runtime set up.
#include <cuda_runtime.h>
#include <cstdio>
__attribute__((constructor)) static void runtime_first() {
    cudaError_t e = cudaFree(0);
    fprintf(stderr, "runtime_first: cudaFree(0) -> %d\n", (int)e);
}
