/*
 * Stacks of launches and of a blocked read, for tests/root_stacks.rs
 * (linked against the fake libcuda, built with frame pointers and without
 * inlining or sibling calls, so every named function is a frame):
 *
 *   stacks ROUNDS
 *
 * Each round: load_batch() blocks in read() on a pipe until a thread
 * writes to it (~20 ms later), then run_step() -> launch_kernel() calls
 * cuLaunchKernel, and sync_step() calls cuStreamSynchronize. main() is the
 * caller of both.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda.h"

#define H(v) ((void *)(uintptr_t)(v))

static int pipefd[2];

static void *writer(void *arg) {
    long rounds = (long)arg;
    for (long i = 0; i < rounds; i++) {
        struct timespec t = {0, 20 * 1000 * 1000};
        nanosleep(&t, NULL);
        char c = 'x';
        if (write(pipefd[1], &c, 1) != 1) exit(3);
    }
    return NULL;
}

void load_batch(void) {
    char c;
    if (read(pipefd[0], &c, 1) != 1) exit(4);
}

void launch_kernel(CUfunction f) {
    if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0) != CUDA_SUCCESS) exit(5);
}

void run_step(CUfunction f) {
    launch_kernel(f);
}

void sync_step(void) {
    if (cuStreamSynchronize(0) != CUDA_SUCCESS) exit(6);
}

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 3;
    CUfunction f;
    if (cuInit(0) != CUDA_SUCCESS || cuModuleGetFunction(&f, H(0x30001), "step_kernel") != CUDA_SUCCESS) return 2;
    if (pipe(pipefd) != 0) return 2;
    pthread_t t;
    pthread_create(&t, NULL, writer, (void *)rounds);
    for (long i = 0; i < rounds; i++) {
        load_batch();
        run_step(f);
        sync_step();
    }
    pthread_join(t, NULL);
    return 0;
}
