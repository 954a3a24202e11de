/*
 * One rank of a fake two-process job (root_devices.rs): binds the primary
 * context of device LOCAL_RANK as the CUDA runtime does (cuCtxSetCurrent,
 * then cuDevicePrimaryCtxRetain), makes a stream on it and launches
 * LAUNCHES (argv[1]) kernels, with a stream synchronization after each.
 * Sleeps 300 ms first, so that tracer reads its environment (RANK,
 * LOCAL_RANK) while the process is there.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fakecuda.h"

#define H(v) ((void *)(uintptr_t)(v))

int main(int argc, char **argv) {
    const char *lr = getenv("LOCAL_RANK");
    int dev = lr ? atoi(lr) : 0;
    int n = argc > 1 ? atoi(argv[1]) : 3;
    CUcontext ctx;
    CUstream s;
    usleep(300 * 1000);
    cuInit(0);
    cuCtxSetCurrent(H(0xc7000 + dev)); /* the fake's primary context handle of dev */
    cuDevicePrimaryCtxRetain(&ctx, dev);
    cuStreamCreate(&s, (unsigned)dev);
    for (int i = 0; i < n; i++) {
        cuLaunchKernel(H(0x7f0000001000), 1, 1, 1, 32, 1, 1, 0, s, 0, 0);
        cuStreamSynchronize(s);
    }
    printf("worker %d done\n", dev);
    return 0;
}
