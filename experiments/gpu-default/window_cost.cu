// What a default recording's CUPTI window costs the program, timed inside one
// process (issue 43: the default's cost over the pure-uprobe mode is its
// windows; the footer's `gpu_timestamps.window_cost_ns` is the budget's
// estimate of it). window_cost.sh runs it under forced windows and without.
//
//   nvcc -O2 -o window_cost window_cost.cu && ./window_cost BATCHES_FILE [PHASE_S [WARM_S [NODES]]]
//
// After WARM_S seconds of launches (past the window at cuInit), three phases
// of PHASE_S seconds each, every batch timed back to back (each batch's end
// is the next one's start, its synchronization included, so that nothing
// the windows cost falls between batches):
//   launch  1,000 launches of an empty kernel, then a stream synchronization
//   graph   50 launches of a graph of NODES empty kernel nodes (a JAX/XLA or
//           torch.compile step), then a synchronization
//   sync    100 steps of one launch and one synchronization (a
//           latency-sensitive loop)
// BATCHES_FILE gets one line per batch: `PHASE T0 T1 ITEMS` (CLOCK_MONOTONIC
// ns, the clock of the trace's `gpu_window` lines; ITEMS: launches, graph
// launches or steps). Prints STEADY_S (the three phases' seconds).
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include <cuda_runtime.h>

__global__ void empty_kernel() {}

static long long now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void check(cudaError_t e, const char *what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "window_cost: %s: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

struct Batch {
    const char *phase;
    long long t0, t1;
    int items;
};

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: window_cost BATCHES_FILE [PHASE_S [WARM_S [NODES]]]\n");
        return 2;
    }
    double phase_s = argc > 2 ? std::atof(argv[2]) : 4.0;
    double warm_s = argc > 3 ? std::atof(argv[3]) : 0.6;
    int nodes = argc > 4 ? std::atoi(argv[4]) : 20;
    if (phase_s <= 0 || nodes < 1) {
        std::fprintf(stderr, "window_cost: PHASE_S > 0 and NODES >= 1\n");
        return 2;
    }
    FILE *out = std::fopen(argv[1], "w");
    if (!out) {
        std::perror(argv[1]);
        return 2;
    }
    cudaStream_t s;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
    // the graph: NODES launches captured from the stream
    cudaGraph_t g;
    cudaGraphExec_t ge;
    check(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "capture");
    for (int i = 0; i < nodes; i++) empty_kernel<<<1, 1, 0, s>>>();
    check(cudaStreamEndCapture(s, &g), "end capture");
    check(cudaGraphInstantiate(&ge, g, 0), "instantiate");
    long long w0 = now_ns();
    while (now_ns() - w0 < (long long)(warm_s * 1e9)) {
        for (int i = 0; i < 1000; i++) empty_kernel<<<1, 1, 0, s>>>();
        for (int i = 0; i < 20; i++) check(cudaGraphLaunch(ge, s), "warm graph launch");
        check(cudaStreamSynchronize(s), "warm-up synchronize");
    }
    std::vector<Batch> b;
    b.reserve(1 << 20);
    long long span = (long long)(phase_s * 1e9);
    long long steady0 = now_ns();
    long long t = steady0, end = t + span;
    while (t < end) {
        for (int i = 0; i < 1000; i++) empty_kernel<<<1, 1, 0, s>>>();
        check(cudaStreamSynchronize(s), "launch batch");
        long long t1 = now_ns();
        b.push_back({"launch", t, t1, 1000});
        t = t1;
    }
    end = t + span;
    while (t < end) {
        for (int i = 0; i < 50; i++) check(cudaGraphLaunch(ge, s), "graph launch");
        check(cudaStreamSynchronize(s), "graph batch");
        long long t1 = now_ns();
        b.push_back({"graph", t, t1, 50});
        t = t1;
    }
    end = t + span;
    while (t < end) {
        for (int i = 0; i < 100; i++) {
            empty_kernel<<<1, 1, 0, s>>>();
            check(cudaStreamSynchronize(s), "sync step");
        }
        long long t1 = now_ns();
        b.push_back({"sync", t, t1, 100});
        t = t1;
    }
    check(cudaGetLastError(), "launch");
    for (const Batch &x : b) std::fprintf(out, "%s %lld %lld %d\n", x.phase, x.t0, x.t1, x.items);
    std::fclose(out);
    std::printf("NODES %d\nSTEADY_S %.4f\n", nodes, (t - steady0) / 1e9);
    return 0;
}
