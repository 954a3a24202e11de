/* Two threads that sleep the same way: one named as tracer-cupti's own
 * threads are (the injection library's window thread, "tracer-cupti-sa" as
 * the kernel keeps it), one named "worker". tracer takes a stack at the
 * worker's switch-outs and none at the other's (counted in the footer). */
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static int rounds = 20;

static void nap(void) {
    struct timespec t = {0, 2000000};
    nanosleep(&t, 0);
}

static void *sleeper(void *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
    for (int i = 0; i < rounds; i++)
        nap();
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1)
        rounds = atoi(argv[1]);
    pthread_t a, b;
    pthread_create(&a, 0, sleeper, "tracer-cupti-sample");
    pthread_join(a, 0);
    pthread_create(&b, 0, sleeper, "worker");
    pthread_join(b, 0);
    return 0;
}
