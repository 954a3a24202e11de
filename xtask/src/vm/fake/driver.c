/* Calls the fake libcuda: cuInit(7), cuMemAlloc_v2(4096), 3x cuLaunchKernel. Exit 1 on error. */
#include <stdio.h>

typedef unsigned long long CUdeviceptr;
int cuInit(unsigned int flags);
int cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void *stream, void **params, void **extra);

int main(void) {
    CUdeviceptr p = 0;
    int bad = cuInit(7) != 0 || cuMemAlloc_v2(&p, 4096) != 0;
    for (unsigned i = 1; i <= 3; i++)
        bad |= cuLaunchKernel((void *)0x1000, i, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL) != 0;
    if (bad)
        fprintf(stderr, "driver: a fake CUDA call failed\n");
    return bad;
}
