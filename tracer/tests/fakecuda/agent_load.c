/*
 * A traced program for tests/root_agent.rs, linked against the fake libcuda.
 *
 *   agent_load DIR LAUNCHES [LAUNCHES2]
 *
 * Calls cuInit every 20 ms until DIR/go exists (so the test can wait until
 * the agent reports the process before the counted work starts), then:
 * LAUNCHES cuLaunchKernel of "gemm_kernel", cuMemAlloc_v2 of 4096 and 8192
 * bytes, cuMemFree_v2 of the second, three cuMemcpyHtoD_v2 of 1000 bytes,
 * cuCtxSynchronize; writes DIR/done. With LAUNCHES2: again cuInit until
 * DIR/go2 exists, then LAUNCHES2 launches and DIR/done2. Then waits for
 * DIR/exit and exits 0.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakecuda.h"

#define H(v) ((void *)(uintptr_t)(v))

static int exists(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void touch(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) {
        perror(p);
        exit(1);
    }
    fclose(f);
}

static void wait_for(const char *dir, const char *name, int call) {
    while (!exists(dir, name)) {
        if (call)
            cuInit(0);
        usleep(20000);
    }
}

static void launches(CUfunction f, long n) {
    for (long i = 0; i < n; i++) {
        if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0) != CUDA_SUCCESS) {
            fprintf(stderr, "agent_load: launch %ld failed\n", i);
            exit(1);
        }
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: agent_load DIR LAUNCHES [LAUNCHES2]\n");
        return 2;
    }
    const char *dir = argv[1];
    wait_for(dir, "go", 1);
    CUfunction f = 0;
    if (cuModuleGetFunction(&f, H(0x30001), "gemm_kernel") != CUDA_SUCCESS)
        return 1;
    launches(f, atol(argv[2]));
    CUdeviceptr a = 0, b = 0;
    cuMemAlloc_v2(&a, 4096);
    cuMemAlloc_v2(&b, 8192);
    cuMemFree_v2(b);
    char host[1000];
    memset(host, 1, sizeof host);
    for (int i = 0; i < 3; i++)
        cuMemcpyHtoD_v2(a, host, sizeof host);
    cuCtxSynchronize();
    touch(dir, "done");
    if (argc > 3) {
        wait_for(dir, "go2", 1);
        launches(f, atol(argv[3]));
        cuCtxSynchronize();
        touch(dir, "done2");
    }
    wait_for(dir, "exit", 0);
    return 0;
}
