// The host cost of a kernel launch and of a launch + synchronization, timed
// inside one process (issue 43's standing cost of the injection library, and
// every recording mode's cost per call): gpu_launch_cost.sh runs it once per
// mode and round.
//
//   nvcc -O2 -o launch_cost launch_cost.cu && ./launch_cost [BATCHES [PER_BATCH [WARM_S [SYNC_STEPS]]]]
//
// After WARM_S seconds of launches (a default recording's first window opens
// at cuInit and closes at a launch about 100 ms later: the timed part must
// come after it), BATCHES batches of PER_BATCH launches of an empty kernel
// on the legacy stream, each batch timed from its first launch to its last
// launch's return (then a synchronization, untimed); then SYNC_STEPS steps of
// one launch and one cudaStreamSynchronize, timed in groups of 100.
// Prints (ns, the median and the tenth percentile of the batches' per-launch
// figures):
//   LAUNCH_NS <median> <p10>
//   SYNC_STEP_NS <median> <p10>
//   STEADY_S <seconds of the timed part>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

__global__ void empty_kernel() {}

static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static void check(cudaError_t e, const char *what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "launch_cost: %s: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

static void print_stat(const char *label, std::vector<double> v) {
    std::sort(v.begin(), v.end());
    std::printf("%s %.1f %.1f\n", label, v[v.size() / 2], v[v.size() / 10]);
}

int main(int argc, char **argv) {
    int batches = argc > 1 ? std::atoi(argv[1]) : 200;
    int per = argc > 2 ? std::atoi(argv[2]) : 1000;
    double warm_s = argc > 3 ? std::atof(argv[3]) : 0.6;
    int sync_steps = argc > 4 ? std::atoi(argv[4]) : 10000;
    if (batches < 10 || per < 1 || sync_steps < 1000) {
        std::fprintf(stderr, "usage: launch_cost [BATCHES>=10 [PER_BATCH>=1 [WARM_S [SYNC_STEPS>=1000]]]]\n");
        return 2;
    }
    check(cudaFree(nullptr), "cudaFree(0)");
    double t0 = now_s();
    while (now_s() - t0 < warm_s) {
        for (int i = 0; i < per; i++) empty_kernel<<<1, 1>>>();
        check(cudaStreamSynchronize(nullptr), "warm-up synchronize");
    }
    double steady0 = now_s();
    std::vector<double> launch;
    for (int b = 0; b < batches; b++) {
        double t = now_s();
        for (int i = 0; i < per; i++) empty_kernel<<<1, 1>>>();
        double t1 = now_s();
        check(cudaStreamSynchronize(nullptr), "batch synchronize");
        launch.push_back((t1 - t) * 1e9 / per);
    }
    check(cudaGetLastError(), "launch");
    std::vector<double> step;
    for (int g = 0; g < sync_steps / 100; g++) {
        double t = now_s();
        for (int i = 0; i < 100; i++) {
            empty_kernel<<<1, 1>>>();
            cudaStreamSynchronize(nullptr);
        }
        step.push_back((now_s() - t) * 1e9 / 100);
    }
    double steady = now_s() - steady0;
    print_stat("LAUNCH_NS", launch);
    print_stat("SYNC_STEP_NS", step);
    std::printf("STEADY_S %.4f\n", steady);
    return 0;
}
