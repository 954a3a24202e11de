/*
 * A tiny fake libcuda.so.1 for the kprobe VM: the three functions driver.c calls.
 * Built with -O0 -fno-omit-frame-pointer -fcf-protection=none so that every function
 * starts with `push %rbp` (as in the real libcuda; see tracer/tests/fakecuda).
 */
#include <stddef.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

CUresult cuInit(unsigned int flags) { return flags == 7 ? 0 : 1; }

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    *dptr = 0x7f0000000000ULL + bytesize;
    return 0;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz;
    (void)shared, (void)stream, (void)params, (void)extra;
    return 0;
}
