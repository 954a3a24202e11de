/*
 * Four idle gaps with four different operating-system causes, for
 * tests/root_sched.rs (linked against the fake libcuda):
 *
 *   fourgaps [MS]
 *
 * Five rounds of "launch, synchronize" (each synchronization's return is a
 * completion proof: the GPU is certainly idle until the next launch), with
 * MS milliseconds (default 80) of one kind of CPU-side delay between them:
 *   1. asleep in nanosleep;
 *   2. spinning on the CPU;
 *   3. blocked reading a pipe, until a thread named "pipewriter" writes;
 *   4. runnable but preempted: a child process named "cpuhog", pinned to
 *      the same CPU at a higher SCHED_FIFO priority, spins MS ms.
 * The program runs at SCHED_FIFO where allowed (priority 1, pinned to one
 * CPU), so that whatever else loads the machine (a parallel build, a VM)
 * cannot take its CPU: the spin is on the CPU all along, a sleep's or a
 * read's wakeup runs at once, and during gap 4 the only task that runs in
 * its place is the hog. The hog is forked before gap 4 (named, then
 * blocked on a pipe), raised to priority 2 and woken in the gap: it takes
 * the CPU from this thread at once and holds it MS ms.
 * Prints one line per gap on stdout: "gap N START_NS END_NS" (CLOCK_MONOTONIC,
 * the synchronization's return and the next launch's call), and the hog's
 * pid as "hog PID".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda.h"

#define H(v) ((void *)(uintptr_t)(v))

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void spin_ns(long long ns) {
    long long end = now_ns() + ns;
    while (now_ns() < end) {
    }
}

static long long ms;
static int pipefd[2];

static void *pipewriter(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "pipewriter");
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
    char c = 'x';
    if (write(pipefd[1], &c, 1) != 1)
        perror("fourgaps: write");
    return NULL;
}

static CUfunction f;

static void round_trip(void) {
    if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0) != CUDA_SUCCESS || cuStreamSynchronize(0) != CUDA_SUCCESS) {
        fprintf(stderr, "fourgaps: fake driver call failed\n");
        exit(1);
    }
}

int main(int argc, char **argv) {
    ms = argc > 1 ? atol(argv[1]) : 80;
    long long gap_ns = ms * 1000000LL;
    if (cuModuleGetFunction(&f, H(0x30001), "gemm_kernel") != CUDA_SUCCESS)
        return 1;
    /* Everything on one CPU, so that the hog preempts this thread. */
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) {
        perror("fourgaps: sched_setaffinity");
        return 1;
    }
    if (pipe(pipefd) != 0)
        return 1;
    volatile int *hog_done = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (hog_done == MAP_FAILED)
        return 1;
    long long start[4], end[4];
    /* Not inherited by the hog: it starts at SCHED_OTHER, so that it cannot
     * take the CPU before it is raised in gap 4. */
    struct sched_param fifo = {.sched_priority = 1};
    int rt = sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &fifo) == 0;

    round_trip();
    start[0] = now_ns();
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
    end[0] = now_ns();

    round_trip();
    /* At SCHED_FIFO no other program on the machine takes this CPU: on CPU
     * all along. */
    start[1] = now_ns();
    spin_ns(gap_ns);
    end[1] = now_ns();

    round_trip();
    start[2] = now_ns();
    pthread_t w;
    pthread_create(&w, NULL, pipewriter, NULL);
    char c;
    if (read(pipefd[0], &c, 1) != 1)
        return 1;
    end[2] = now_ns();
    pthread_join(w, NULL);

    /* The hog, named and waiting for its go before the gap begins. */
    int ready[2], go[2];
    if (pipe(ready) != 0 || pipe(go) != 0)
        return 1;
    pid_t hog = fork();
    if (hog == 0) {
        prctl(PR_SET_NAME, "cpuhog");
        if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(1);
        spin_ns(gap_ns);
        *hog_done = 1;
        _exit(0);
    }
    if (read(ready[0], &c, 1) != 1)
        return 1;
    struct sched_param above = {.sched_priority = 2};
    if (!rt || sched_setscheduler(hog, SCHED_FIFO, &above) != 0) {
        perror("fourgaps: SCHED_FIFO");
        kill(hog, SIGKILL);
        return 1;
    }

    round_trip();
    start[3] = now_ns();
    /* Woken above this thread's priority on its CPU, the hog preempts it
     * here; runnable all along until the hog is done. */
    if (write(go[1], "g", 1) != 1)
        return 1;
    while (!*hog_done) {
    }
    end[3] = now_ns();
    int st;
    waitpid(hog, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 1;
    round_trip();

    for (int i = 0; i < 4; i++)
        printf("gap %d %lld %lld\n", i + 1, start[i], end[i]);
    printf("hog %d\n", (int)hog);
    return 0;
}
