/*
 * Load, exec, attach and soak scenarios for tracer's reliability tests
 * (../root_reliability.rs, ../root_soak.rs), calling the fake libcuda.
 *
 *   reliability procs P T N   P processes x T threads, started together; each
 *                             thread makes N iterations of
 *                             cuCtxSetCurrent(ENC(p, t, i)), and every 16th
 *                             iteration also cuLaunchKernel(f = ENC(p, t, i),
 *                             grid (p+1, t+1, i), block (128,1,1), shared i,
 *                             stream (p << 8 | t) + 1)
 *                             ENC(p, t, i) = (p+1) << 40 | (t+1) << 32 | i
 *   reliability exec_chain    CUDA calls, a child that execs /bin/sh (no CUDA),
 *                             then an exec of itself as `exec_after`
 *   reliability exec_after    CUDA calls after the exec (stale handle, then a
 *                             fresh lookup that returns the same handle value)
 *   reliability paced         until SIGUSR1: every millisecond
 *                             cuCtxSetCurrent(0x1000 + i) then cuCtxGetCurrent,
 *                             checked; prints "calls=N errors=E first=0x1000
 *                             last=X" at the end (exit 1 if E > 0); with
 *                             RELIABILITY_PROGRESS=FILE (at least 8 bytes, made
 *                             by the caller) the iterations done so far are
 *                             kept in FILE's first 8 bytes (mapped shared)
 *   reliability steady R S    S seconds at R calls per second (in 1 ms ticks):
 *                             per unit cuCtxSetCurrent(i), cuMemAlloc_v2,
 *                             cuLaunchKernel(grid i % 1000 + 1), cuMemFree_v2;
 *                             prints "calls=N seconds=S"
 *   reliability steady_nofree R S   the same without the frees (a second
 *                             cuCtxSetCurrent instead): tracer must remember
 *                             every allocation, so its heap grows (the soak's
 *                             positive control)
 *
 * Any failed check prints a message and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda.h"

#define H(v) ((void *)(uintptr_t)(v))
#define HOSTBUF 0x10000000ULL

static int failures;

#define OK(call)                                                                           \
    do {                                                                                   \
        CUresult r_ = (call);                                                              \
        if (r_ != CUDA_SUCCESS) {                                                          \
            fprintf(stderr, "reliability: %s returned %d\n", #call, r_);                   \
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);                            \
        }                                                                                  \
    } while (0)

/* ---- procs */

struct worker {
    long p, t, n;
    pthread_barrier_t *barrier;
};

static uint64_t enc(long p, long t, long i) {
    return ((uint64_t)(p + 1) << 40) | ((uint64_t)(t + 1) << 32) | (uint64_t)i;
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    pthread_barrier_wait(w->barrier);
    for (long i = 0; i < w->n; i++) {
        OK(cuCtxSetCurrent(H(enc(w->p, w->t, i))));
        if (i % 16 == 0)
            OK(cuLaunchKernel(H(enc(w->p, w->t, i)), (unsigned)w->p + 1, (unsigned)w->t + 1, (unsigned)i, 128, 1, 1,
                              (unsigned)i, H(((w->p << 8) | w->t) + 1), 0, 0));
    }
    return 0;
}

static int child_procs(long p, long threads, long n, int ready_fd, int go_fd) {
    pthread_t th[64];
    struct worker w[64];
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, 0, (unsigned)threads + 1);
    for (long t = 0; t < threads; t++) {
        w[t] = (struct worker){p, t, n, &barrier};
        if (pthread_create(&th[t], 0, worker_main, &w[t]) != 0) {
            perror("reliability: pthread_create");
            return 1;
        }
    }
    /* Tell the parent this process is ready, wait for the go of all. */
    char c = 'r';
    if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) < 0)
        return 1;
    pthread_barrier_wait(&barrier);
    for (long t = 0; t < threads; t++)
        pthread_join(th[t], 0);
    return failures ? 1 : 0;
}

static int scenario_procs(long procs, long threads, long n) {
    if (procs < 1 || procs > 64 || threads < 1 || threads > 64)
        return 2;
    int ready[2], go[2];
    if (pipe(ready) || pipe(go)) {
        perror("reliability: pipe");
        return 1;
    }
    pid_t pids[64];
    for (long p = 0; p < procs; p++) {
        fflush(0);
        pids[p] = fork();
        if (pids[p] < 0) {
            perror("reliability: fork");
            return 1;
        }
        if (pids[p] == 0) {
            close(ready[0]);
            close(go[1]);
            _exit(child_procs(p, threads, n, ready[1], go[0]));
        }
    }
    close(ready[1]);
    close(go[0]);
    for (long p = 0; p < procs; p++) {
        char c;
        if (read(ready[0], &c, 1) != 1) {
            fprintf(stderr, "reliability: a child died before it was ready\n");
            return 1;
        }
    }
    close(go[1]); /* every child's read returns: go */
    int rc = 0;
    for (long p = 0; p < procs; p++) {
        int st = 0;
        if (waitpid(pids[p], &st, 0) != pids[p] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "reliability: child %ld failed (status %#x)\n", p, st);
            rc = 1;
        }
    }
    return rc;
}

/* ---- exec */

static int scenario_exec_chain(void) {
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return 1;
    self[len] = 0;
    OK(cuInit(0x21));
    CUdeviceptr d = 0;
    OK(cuMemAlloc_v2(&d, 4096));
    OK(cuMemcpy(d, HOSTBUF, 100));
    CUfunction f = 0;
    OK(cuModuleGetFunction(&f, H(0x30001), "kernel_A"));
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0));
    fflush(0);
    pid_t child = fork();
    if (child < 0)
        return 1;
    if (child == 0) {
        OK(cuInit(0x22));
        execl("/bin/sh", "sh", "-c", "exit 0", (char *)0);
        perror("reliability: exec /bin/sh");
        _exit(1);
    }
    int st = 0;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "reliability: the /bin/sh child failed (status %#x)\n", st);
        return 1;
    }
    if (failures)
        return 1;
    execl(self, self, "exec_after", (char *)0);
    perror("reliability: exec self");
    return 1;
}

static int scenario_exec_after(void) {
    OK(cuInit(0x23));
    /* The handle the previous image looked up: unknown to this one. */
    OK(cuLaunchKernel(H(0x4008), 2, 1, 1, 1, 1, 1, 0, 0, 0, 0));
    /* The allocation of the previous image is gone too. */
    OK(cuMemcpy(0x7f0000000000ULL, HOSTBUF, 200));
    CUfunction f = 0;
    OK(cuModuleGetFunction(&f, H(0x30001), "kernel_B"));
    if (f != H(0x4008)) {
        fprintf(stderr, "reliability: kernel_B handle %p, expected 0x4008\n", f);
        return 1;
    }
    OK(cuLaunchKernel(f, 3, 1, 1, 1, 1, 1, 0, 0, 0, 0));
    return failures ? 1 : 0;
}

/* ---- paced (for -p attach and other users) */

static volatile sig_atomic_t stop;

static void on_usr1(int sig) {
    (void)sig;
    stop = 1;
}

static void tick(struct timespec *next, long ns) {
    next->tv_nsec += ns;
    while (next->tv_nsec >= 1000000000L) {
        next->tv_nsec -= 1000000000L;
        next->tv_sec++;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, 0) == EINTR)
        ;
}

/* RELIABILITY_PROGRESS's first 8 bytes, mapped shared; NULL without it. */
static uint64_t *progress_counter(void) {
    const char *path = getenv("RELIABILITY_PROGRESS");
    if (!path)
        return 0;
    int fd = open(path, O_RDWR);
    void *m = fd < 0 ? MAP_FAILED : mmap(0, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        perror(path);
        exit(1);
    }
    close(fd);
    return m;
}

static int scenario_paced(void) {
    signal(SIGUSR1, on_usr1);
    uint64_t *progress = progress_counter();
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    long i = 0, errors = 0;
    while (!stop) {
        CUcontext want = H(0x1000 + i), got = 0;
        if (cuCtxSetCurrent(want) != CUDA_SUCCESS || cuCtxGetCurrent(&got) != CUDA_SUCCESS || got != want)
            errors++;
        i++;
        if (progress)
            __atomic_store_n(progress, (uint64_t)i, __ATOMIC_RELEASE);
        if (i == 1) {
            printf("ready\n");
            fflush(stdout);
        }
        tick(&next, 1000000L);
    }
    printf("calls=%ld errors=%ld first=0x1000 last=%#lx\n", i, errors, 0x1000 + i - 1);
    return errors ? 1 : 0;
}

/* ---- steady (soak) */

static int scenario_steady(long rate, long seconds, int free_them) {
    if (rate < 4 || seconds < 1)
        return 2;
    CUfunction f = 0;
    OK(cuModuleGetFunction(&f, H(0x30001), "soak_kern"));
    long units_per_s = rate / 4, ticks = seconds * 1000, done = 0, i = 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (long k = 1; k <= ticks; k++) {
        long target = units_per_s * k / 1000;
        for (; done < target; done++, i++) {
            OK(cuCtxSetCurrent(H(i)));
            CUdeviceptr d = 0;
            OK(cuMemAlloc_v2(&d, 4096));
            OK(cuLaunchKernel(f, (unsigned)(i % 1000) + 1, 1, 1, 32, 1, 1, 0, 0, 0, 0));
            if (free_them)
                OK(cuMemFree_v2(d));
            else
                OK(cuCtxSetCurrent(H(i)));
        }
        tick(&next, 1000000L);
    }
    printf("calls=%ld seconds=%ld\n", done * 4 + 1, seconds);
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    const char *s = argc > 1 ? argv[1] : "";
    int rc;
    if (!strcmp(s, "procs") && argc > 4)
        rc = scenario_procs(atol(argv[2]), atol(argv[3]), atol(argv[4]));
    else if (!strcmp(s, "exec_chain"))
        rc = scenario_exec_chain();
    else if (!strcmp(s, "exec_after"))
        rc = scenario_exec_after();
    else if (!strcmp(s, "paced"))
        rc = scenario_paced();
    else if (!strcmp(s, "steady") && argc > 3)
        rc = scenario_steady(atol(argv[2]), atol(argv[3]), 1);
    else if (!strcmp(s, "steady_nofree") && argc > 3)
        rc = scenario_steady(atol(argv[2]), atol(argv[3]), 0);
    else {
        fprintf(stderr, "usage: reliability procs P T N|exec_chain|exec_after|paced|steady[_nofree] RATE SECONDS\n");
        return 2;
    }
    return rc || failures ? 1 : 0;
}
