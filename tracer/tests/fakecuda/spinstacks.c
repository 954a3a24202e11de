/*
 * On-CPU time between launches, for tests/root_stacks.rs (linked against
 * the fake libcuda, built like stacks.c with frame pointers and without
 * inlining or sibling calls):
 *
 *   spinstacks ROUNDS MS
 *
 * Each round: run_step() launches and synchronizes (the synchronization's
 * return proves the GPU idle), then decode_spin() computes on the CPU for
 * MS milliseconds without a system call (the clock is read from the vDSO
 * every 2^16 iterations), called from load_batch(). The gap between the
 * synchronization and the next launch is on CPU in decode_spin.
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

volatile unsigned long sink;

void decode_spin(long long ns) {
    long long end = now_ns() + ns;
    unsigned long x = 1;
    for (;;) {
        for (int i = 0; i < 65536; i++)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
        sink = x;
        if (now_ns() >= end)
            break;
    }
}

void load_batch(long long ns) {
    decode_spin(ns);
}

void run_step(CUfunction f) {
    if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0) != CUDA_SUCCESS || cuStreamSynchronize(0) != CUDA_SUCCESS)
        exit(5);
}

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 3;
    long long ms = argc > 2 ? atol(argv[2]) : 50;
    CUfunction f;
    if (cuInit(0) != CUDA_SUCCESS || cuModuleGetFunction(&f, H(0x30001), "step_kernel") != CUDA_SUCCESS)
        return 2;
    for (long i = 0; i < rounds; i++) {
        run_step(f);
        load_batch(ms * 1000000LL);
    }
    run_step(f);
    return 0;
}
