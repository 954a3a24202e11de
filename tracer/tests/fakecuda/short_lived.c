/*
 * A short-lived program for tests/root_agent.rs, linked against the fake
 * libcuda:
 *
 *   short_lived LAUNCHES [ARGS...]
 *
 * LAUNCHES cuLaunchKernel of "gemm_kernel" and exits at once (the whole
 * run takes about a millisecond); prints the microseconds from main to the
 * last launch on stderr. ARGS are ignored (the test passes a secret that
 * must not appear in the agent's labels).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fakecuda.h"

#define H(v) ((void *)(uintptr_t)(v))

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    long long t0 = now_ns();
    if (argc < 2) {
        fprintf(stderr, "usage: short_lived LAUNCHES [ARGS...]\n");
        return 2;
    }
    CUfunction f = 0;
    if (cuModuleGetFunction(&f, H(0x30001), "gemm_kernel") != CUDA_SUCCESS)
        return 1;
    long n = atol(argv[1]);
    for (long i = 0; i < n; i++) {
        if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0) != CUDA_SUCCESS) {
            fprintf(stderr, "short_lived: launch %ld failed\n", i);
            return 1;
        }
    }
    fprintf(stderr, "short_lived: %lld us\n", (now_ns() - t0) / 1000);
    return 0;
}
