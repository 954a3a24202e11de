/* A C program on the CUDA driver API whose GPU waits for its CPU: each
 * step launches one tiny kernel from launch_step(), synchronizes, then
 * either blocks reading a pipe (wait_for_input: a second thread writes to it
 * 2 ms later) or computes on the CPU (cpu_work: ~2 ms). Built with frame
 * pointers and no inlining, so that its stacks name these functions:
 *   gcc -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls \
 *       -I/usr/local/cuda/include c_launcher.c -o c_launcher -L/usr/local/nvidia/lib64 -lcuda -lpthread
 *   sudo tracer -- ./c_launcher 50
 */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const char *ptx =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry tick(.param .u64 p) {\n"
    "  .reg .u64 %a; .reg .u32 %v;\n"
    "  ld.param.u64 %a, [p]; cvta.to.global.u64 %a, %a;\n"
    "  ld.global.u32 %v, [%a]; add.u32 %v, %v, 1; st.global.u32 [%a], %v; ret;\n}\n";

#define CHECK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { fprintf(stderr, "%s: %d\n", #x, r_); exit(1); } } while (0)

static int pipe_fd[2];
static volatile double sink;

static void *writer(void *arg) {
    int steps = *(int *)arg;
    for (int i = 0; i < steps; i++) {
        struct timespec t = {0, 2000000};
        nanosleep(&t, NULL);
        if (write(pipe_fd[1], "x", 1) != 1) exit(1);
    }
    return NULL;
}

void wait_for_input(void) {
    char c;
    if (read(pipe_fd[0], &c, 1) != 1) exit(1);
}

void cpu_work(void) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    double x = 0;
    do {
        for (int i = 0; i < 10000; i++) x += i * 0.5;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec) < 2e6);
    sink = x;
}

void launch_step(CUfunction f, CUdeviceptr p) {
    void *args[] = {&p};
    CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL));
    CHECK(cuCtxSynchronize());
}

void run_steps(CUfunction f, CUdeviceptr p, int steps) {
    for (int i = 0; i < steps; i++) {
        launch_step(f, p);
        if (i % 2 == 0) wait_for_input(); else cpu_work();
    }
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 50;
    CUdevice d; CUcontext c; CUmodule m; CUfunction f; CUdeviceptr p;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&d, 0));
    CHECK(cuDevicePrimaryCtxRetain(&c, d));
    CHECK(cuCtxSetCurrent(c));
    CHECK(cuModuleLoadData(&m, ptx));
    CHECK(cuModuleGetFunction(&f, m, "tick"));
    CHECK(cuMemAlloc(&p, 4));
    CHECK(cuMemsetD32(p, 0, 1));
    if (pipe(pipe_fd) != 0) return 1;
    int half = (steps + 1) / 2;
    pthread_t t;
    pthread_create(&t, NULL, writer, &half);
    run_steps(f, p, steps);
    pthread_join(t, NULL);
    unsigned v = 0;
    CHECK(cuMemcpyDtoH(&v, p, 4));
    printf("%d steps, counter %u\n", steps, v);
    return v == (unsigned)steps ? 0 : 1;
}
