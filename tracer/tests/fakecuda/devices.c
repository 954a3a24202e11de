/*
 * Two devices, contexts on each, threads switching contexts: the program
 * behind root_devices.rs, linked against the fake libcuda (whose
 * cuDevicePrimaryCtxRetain gives 0xc7000 + dev, cuCtxCreate_v2 0xc2000 +
 * dev, cuStreamCreate 0xb0000 + Flags). Each call below is commented with
 * the device tracer must put on its line (root_devices.rs lists the same
 * sequence). The threads run one after the other (joined), so the lines'
 * order is fixed.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "fakecuda.h"

#define H(v) ((void *)(uintptr_t)(v))

static CUcontext primary0, primary1, created0;

static void launch(CUstream s) {
    cuLaunchKernel(H(0x7f0000001000), 1, 1, 1, 32, 1, 1, 0, s, 0, 0);
}

/* A thread that binds nothing first: its first launch has no known device. */
static void *second_thread(void *arg) {
    (void)arg;
    launch(0);                    /* null: this thread never set a context */
    cuCtxSetCurrent(primary1);    /* 1 */
    launch(0);                    /* 1 */
    cuCtxPushCurrent_v2(created0); /* 0 */
    cuMemsetD8_v2(0x7f0000000000ULL, 0, 64); /* 0 */
    cuCtxPopCurrent_v2(0);        /* 1 (primary1 is current again) */
    launch(0);                    /* 1 */
    return 0;
}

int main(void) {
    CUstream s0, s1;
    CUcontext popped;
    cuInit(0);                                 /* null */
    cuDevicePrimaryCtxRetain(&primary0, 0);    /* null: retaining binds nothing */
    cuDevicePrimaryCtxRetain(&primary1, 1);    /* null */
    cuCtxSetCurrent(primary0);                 /* 0 */
    cuStreamCreate(&s0, 0);                    /* 0: s0 is on device 0 */
    launch(s0);                                /* 0 */
    cuCtxSetCurrent(primary1);                 /* 1 */
    cuStreamCreate(&s1, 1);                    /* 1: s1 is on device 1 */
    launch(s1);                                /* 1 */
    launch(s0);                                /* 0: the stream's device */
    launch(0);                                 /* 1: the legacy stream of the current context */
    cuCtxCreate_v2(&created0, 0, 0);           /* 0: pushed */
    cuMemcpyHtoD_v2(0x7f0000000000ULL, H(0x10000000), 64); /* 0 */
    cuCtxPushCurrent_v2(primary1);             /* 1 */
    cuMemcpyDtoD_v2(0x7f0000000000ULL, 0x7f0000100000ULL, 64); /* 1 */
    cuCtxPopCurrent_v2(&popped);               /* 0: created0 again */
    cuCtxPopCurrent_v2(&popped);               /* 1: primary1 again */
    cuMemcpyPeer(0x7f0000000000ULL, primary0, 0x7f0000100000ULL, primary1, 64); /* 1: dst 0, src 1 */
    cuStreamSynchronize(s0);                   /* 0 */
    pthread_t t;
    pthread_create(&t, 0, second_thread, 0);
    pthread_join(t, 0);
    cuStreamSynchronize(s1);                   /* 1 */
    printf("devices done\n");
    return 0;
}
