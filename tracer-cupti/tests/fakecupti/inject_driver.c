/*
 * Plays the CUDA driver's part for libtracer_cupti.so: dlopen
 * $CUDA_INJECTION64_PATH, call InitializeInjection, finish the driver's
 * initialisation (CUPTI's CU_INIT_FINISHED callback), then create a context and
 * a stream (through the fake libcupti's hooks) and exit, so the library's
 * atexit handler flushes. `inject_driver exec` execs /bin/true instead of
 * exiting (no atexit: no final flush); `inject_driver wait-exec` first
 * waits until the fake libcupti has delivered its records through the
 * library's flush thread (exit 4 if that has not happened within 120 s);
 * `inject_driver launch N US [IDLE_MS]` calls the fake's fakecupti_launch N times,
 * US µs apart (after IDLE_MS without a launch), printing each launch's time (ns) on stdout, then on stderr
 * how often CUPTI was finalized and called while detached, and how many records
 * were handed over at a launch's return.
 * Build: cc -o inject_driver inject_driver.c -ldl
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    void *inj = dlopen(getenv("CUDA_INJECTION64_PATH"), RTLD_NOW);
    if (!inj) { fprintf(stderr, "inject_driver: %s\n", dlerror()); return 2; }
    int (*init)(void) = (int (*)(void))dlsym(inj, "InitializeInjection");
    if (!init) { fprintf(stderr, "inject_driver: no InitializeInjection\n"); return 2; }
    if (init() != 1) return 3;
    void *c = dlopen(getenv("TRACER_CUPTI_LIB"), RTLD_NOW | RTLD_NOLOAD);
    if (!c) { fprintf(stderr, "inject_driver: fake libcupti not loaded\n"); return 2; }
    /* cuInit ends after InitializeInjection: then the first context */
    ((void (*)(void))dlsym(c, "fakecupti_init_finished"))();
    ((void (*)(void *))dlsym(c, "fakecupti_context_created"))((void *)0x1);
    ((void (*)(void *, void *))dlsym(c, "fakecupti_stream_created"))((void *)0x1, (void *)0x5000);
    if (argc > 1 && strcmp(argv[1], "wait-exec") == 0) {
        int (*delivered)(void) = (int (*)(void))dlsym(c, "fakecupti_delivered");
        for (int ms = 0; !delivered(); ms++) {
            if (ms == 120000) { fprintf(stderr, "inject_driver: hung: no flush delivered within 120 s\n"); return 4; }
            usleep(1000);
        }
    }
    if (argc > 3 && strcmp(argv[1], "launch") == 0) {
        uint64_t (*launch)(void) = (uint64_t (*)(void))dlsym(c, "fakecupti_launch");
        int n = atoi(argv[2]), us = atoi(argv[3]);
        /* a program's set-up first: IDLE_MS without a launch */
        if (argc > 4) usleep(1000 * atoi(argv[4]));
        for (int i = 0; i < n; i++) {
            printf("%llu\n", (unsigned long long)launch());
            usleep(us);
        }
        fflush(stdout);
        int (*fin)(void) = (int (*)(void))dlsym(c, "fakecupti_finalizes");
        int (*bad)(void) = (int (*)(void))dlsym(c, "fakecupti_calls_while_detached");
        int (*at_returns)(void) = (int (*)(void))dlsym(c, "fakecupti_records_at_returns");
        fprintf(stderr, "finalizes %d calls_while_detached %d records_at_returns %d\n", fin(), bad(), at_returns());
    }
    if (argc > 1 && strstr(argv[1], "exec")) {
        execl("/bin/true", "true", (char *)0);
        return 2;
    }
    return 0;
}
