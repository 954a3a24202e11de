/*
 * Load generator for `cargo xtask bench collector`, linked against the fake
 * libcuda (whose functions start with `push %rbp`, like real libcuda's).
 *
 *   bench calls FUNC N THREADS   each thread calls FUNC N times (after 1000
 *                                warm-up calls), timing its loop itself
 *   bench getppid RATE SECONDS   getppid() RATE times a second (0: as fast
 *                                as possible) for SECONDS: with
 *                                `tracer --bench-producer` each call is a record
 *
 * Prints one JSON object on stdout. FUNC: launch (cuLaunchKernel, 11
 * arguments, 5 on the stack), memcpy (cuMemcpyHtoDAsync_v2), sync
 * (cuStreamSynchronize), ctx (cuCtxSetCurrent), params (cuLaunchKernel of
 * k_scalars, 7 parameters through kernelParams, from the image of
 * $BENCH_IMAGE loaded with cuModuleLoadData: what `--replayable` captures),
 * params_big (cuLaunchKernel of k_big: a 1 KiB struct and a pointer, like the
 * large argument structs of cuBLAS's and PyTorch's kernels).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda.h"

#define H(v) ((void *)(uintptr_t)(v))

/* CPU time of the calling thread: the traps and programs are system time
 * of the thread, while time spent preempted by other processes (a busy
 * shared machine) is not. */
static long long thread_cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

enum func { LAUNCH, MEMCPY, SYNC, CTX, PARAMS, PARAMS_BIG };

/* PARAMS: the loaded kernel and its 7 arguments (k_scalars: char, short, int,
 * long, float, double, pointer; kernels.cu), one set per thread. */
static CUfunction scalars;
struct scalar_args {
    char c;
    short s;
    int i;
    long l;
    float f;
    double d;
    void *p;
    void *ptrs[7];
};
static struct scalar_args sargs[64];
/* PARAMS_BIG: k_big(Big b, float *out), Big being 256 floats (kernels.cu). */
static CUfunction big;
struct big_args {
    float v[256];
    float *out;
    void *ptrs[2];
};
static struct big_args bargs[64];

struct worker {
    enum func f;
    long n, index;
    long long ns, cpu_ns;
};

static void call(enum func f, long i, long index) {
    switch (f) {
    case LAUNCH:
        cuLaunchKernel(H(0x7f0000001000 + index), 1200, 1, 1, 256, 1, 1, 2048, H(0x5000), H(0x7ffd00000000 + i), 0);
        break;
    case MEMCPY:
        cuMemcpyHtoDAsync_v2(0x7f4000000000ULL + (unsigned long long)i * 256, H(0x1000 + i), 256, H(0x5000));
        break;
    case SYNC:
        cuStreamSynchronize(H(0x5000 + index));
        break;
    case CTX:
        cuCtxSetCurrent(H(0x100000 * (index + 1) + i));
        break;
    case PARAMS: {
        struct scalar_args *a = &sargs[index];
        a->i = (int)i;
        cuLaunchKernel(scalars, 64, 1, 1, 128, 1, 1, 0, H(0x5000), a->ptrs, 0);
        break;
    }
    case PARAMS_BIG: {
        struct big_args *a = &bargs[index];
        a->v[0] = (float)i;
        cuLaunchKernel(big, 64, 1, 1, 256, 1, 1, 0, H(0x5000), a->ptrs, 0);
        break;
    }
    }
}

static void *worker_main(void *p) {
    struct worker *w = p;
    for (long i = 0; i < 1000; i++)
        call(w->f, i, w->index);
    long long c0 = thread_cpu_ns(), t0 = now_ns();
    for (long i = 0; i < w->n; i++)
        call(w->f, i, w->index);
    w->ns = now_ns() - t0;
    w->cpu_ns = thread_cpu_ns() - c0;
    return 0;
}

/* PARAMS: loads $BENCH_IMAGE (a cubin or fatbin holding k_scalars) and sets
 * each thread's kernelParams. */
static int load_scalars(long nthreads) {
    const char *path = getenv("BENCH_IMAGE");
    FILE *fp = path ? fopen(path, "rb") : 0;
    if (!fp) {
        fprintf(stderr, "bench: params needs BENCH_IMAGE, an image holding k_scalars (%s)\n", path ? path : "unset");
        return 1;
    }
    static unsigned char image[1 << 20];
    size_t len = fread(image, 1, sizeof image, fp);
    fclose(fp);
    CUmodule mod;
    if (len == 0 || cuModuleLoadData(&mod, image) != CUDA_SUCCESS ||
        cuModuleGetFunction(&scalars, mod, "k_scalars") != CUDA_SUCCESS ||
        cuModuleGetFunction(&big, mod, "k_big") != CUDA_SUCCESS) {
        fprintf(stderr, "bench: %s: k_scalars or k_big not loaded\n", path);
        return 1;
    }
    for (long t = 0; t < nthreads; t++) {
        struct scalar_args *a = &sargs[t];
        *a = (struct scalar_args){(char)t, 2, 3, 4, 5.0f, 6.0, H(0x7f0000000000 + t), {0}};
        void *p[7] = {&a->c, &a->s, &a->i, &a->l, &a->f, &a->d, &a->p};
        memcpy(a->ptrs, p, sizeof p);
        struct big_args *b = &bargs[t];
        for (int k = 0; k < 256; k++)
            b->v[k] = (float)(k + t);
        b->out = (float *)H(0x7f0000100000 + t);
        b->ptrs[0] = b->v;
        b->ptrs[1] = &b->out;
    }
    return 0;
}

static int calls(const char *fname, long n, long nthreads) {
    enum func f;
    if (!strcmp(fname, "launch"))
        f = LAUNCH;
    else if (!strcmp(fname, "memcpy"))
        f = MEMCPY;
    else if (!strcmp(fname, "sync"))
        f = SYNC;
    else if (!strcmp(fname, "ctx"))
        f = CTX;
    else if (!strcmp(fname, "params"))
        f = PARAMS;
    else if (!strcmp(fname, "params_big"))
        f = PARAMS_BIG;
    else {
        fprintf(stderr, "bench: unknown function %s (launch|memcpy|sync|ctx|params|params_big)\n", fname);
        return 2;
    }
    if (nthreads < 1 || nthreads > 64 || n < 1)
        return 2;
    if ((f == PARAMS || f == PARAMS_BIG) && load_scalars(nthreads) != 0)
        return 1;
    pthread_t th[64];
    struct worker w[64];
    long long t0 = now_ns();
    for (long t = 0; t < nthreads; t++) {
        w[t] = (struct worker){f, n, t, 0, 0};
        if (pthread_create(&th[t], 0, worker_main, &w[t]) != 0) {
            perror("bench: pthread_create");
            return 1;
        }
    }
    double sum = 0, cpu = 0;
    for (long t = 0; t < nthreads; t++) {
        pthread_join(th[t], 0);
        sum += (double)w[t].ns / n;
        cpu += (double)w[t].cpu_ns / n;
    }
    long long wall = now_ns() - t0;
    printf("{\"func\":\"%s\",\"threads\":%ld,\"calls\":%ld,\"ns_per_call\":%.2f,\"cpu_ns_per_call\":%.2f,"
           "\"wall_s\":%.4f}\n",
           fname, nthreads, (n + 1000) * nthreads, sum / nthreads, cpu / nthreads, wall / 1e9);
    return 0;
}

static int getppid_loop(long rate, double seconds) {
    long long t0 = now_ns(), end = t0 + (long long)(seconds * 1e9), n = 0, t = t0;
    while (t < end) {
        for (int k = 0; k < 32; k++)
            syscall(SYS_getppid);
        n += 32;
        t = now_ns();
        if (rate > 0) {
            /* Ahead of schedule: wait until the next batch is due. */
            long long due = t0 + (long long)((double)n * 1e9 / rate);
            while (t < due && t < end)
                t = now_ns();
        }
    }
    double s = (t - t0) / 1e9;
    printf("{\"syscalls\":%lld,\"seconds\":%.4f,\"rate\":%.0f}\n", n, s, n / s);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "calls"))
        return calls(argv[2], atol(argv[3]), atol(argv[4]));
    if (argc == 4 && !strcmp(argv[1], "getppid"))
        return getppid_loop(atol(argv[2]), atof(argv[3]));
    fprintf(stderr, "usage: bench calls launch|memcpy|sync|ctx|params N THREADS | bench getppid RATE SECONDS\n");
    return 2;
}
