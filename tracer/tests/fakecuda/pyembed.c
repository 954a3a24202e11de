/*
 * A program that embeds Python late, for tests/root_stacks.rs:
 *
 *   pyembed LIBPYTHON SLEEP_MS CODE
 *
 * It sleeps SLEEP_MS first (a switch-out whose stack makes tracer look at
 * the process and find no interpreter: its stacks do not make it look
 * again for 100 ms), then loads LIBPYTHON, starts the interpreter and runs
 * CODE, which loads libcuda through ctypes and launches at once. Not linked
 * against libcuda: its first open is ctypes', after libpython's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: pyembed LIBPYTHON SLEEP_MS CODE\n");
        return 2;
    }
    long ms = atol(argv[2]);
    struct timespec t = {ms / 1000, (ms % 1000) * 1000 * 1000};
    nanosleep(&t, NULL);
    void *py = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (!py) {
        fprintf(stderr, "pyembed: %s\n", dlerror());
        return 1;
    }
    void (*init)(int) = (void (*)(int))dlsym(py, "Py_InitializeEx");
    int (*run)(const char *) = (int (*)(const char *))dlsym(py, "PyRun_SimpleString");
    if (!init || !run) {
        fprintf(stderr, "pyembed: no Py_InitializeEx or PyRun_SimpleString in %s\n", argv[1]);
        return 1;
    }
    init(0);
    return run(argv[3]) == 0 ? 0 : 1;
}
