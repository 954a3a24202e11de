/*
 * A program that maps libcuda late, for tests/root_agent.rs (built without
 * linking libcuda):
 *
 *   agent_dlopen DIR LIBCUDA LAUNCHES
 *
 * Waits for DIR/open, dlopens LIBCUDA, calls cuInit every 20 ms until
 * DIR/go exists, then LAUNCHES cuLaunchKernel, writes DIR/done, waits for
 * DIR/exit.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fakecuda.h"

static int exists(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: agent_dlopen DIR LIBCUDA LAUNCHES\n");
        return 2;
    }
    const char *dir = argv[1];
    while (!exists(dir, "open"))
        usleep(20000);
    void *h = dlopen(argv[2], RTLD_NOW);
    if (!h) {
        fprintf(stderr, "agent_dlopen: %s\n", dlerror());
        return 1;
    }
    CUresult (*init)(unsigned int) = (CUresult(*)(unsigned int))dlsym(h, "cuInit");
    CUresult (*get)(CUfunction *, CUmodule, const char *) =
        (CUresult(*)(CUfunction *, CUmodule, const char *))dlsym(h, "cuModuleGetFunction");
    CUresult (*launch)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                       unsigned int, unsigned int, CUstream, void **, void **) =
        (CUresult(*)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                     unsigned int, unsigned int, CUstream, void **, void **))dlsym(h, "cuLaunchKernel");
    if (!init || !get || !launch) {
        fprintf(stderr, "agent_dlopen: missing symbols\n");
        return 1;
    }
    while (!exists(dir, "go")) {
        init(0);
        usleep(20000);
    }
    CUfunction f = 0;
    if (get(&f, (CUmodule)(uintptr_t)0x30001, "late_kernel") != CUDA_SUCCESS)
        return 1;
    for (long i = 0; i < atol(argv[3]); i++)
        if (launch(f, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0) != CUDA_SUCCESS)
            return 1;
    char p[4096];
    snprintf(p, sizeof p, "%s/done", dir);
    FILE *d = fopen(p, "w");
    if (!d)
        return 1;
    fclose(d);
    while (!exists(dir, "exit"))
        usleep(20000);
    return 0;
}
