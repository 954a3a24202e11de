/*
 * A tiny fake libcuda.so.1 for the kprobe VM: the functions driver.c and fourgaps call.
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

/* For fourgaps (tracer/tests/fakecuda/fourgaps.c, the scheduler test 60-sched-fourgaps). */
CUresult cuModuleGetFunction(void **f, void *mod, const char *name) {
    (void)mod, (void)name;
    *f = (void *)0x1000;
    return 0;
}

CUresult cuStreamSynchronize(void *stream) {
    (void)stream;
    return 0;
}
