// A small CUDA program with known outputs, and the replayable recording of
// it written by hand in the contract's format (docs/recording-format.md):
// the program writes trace.jsonl (with @IMAGE@/@DATA_*@ placeholders for the
// SHA-256 names) and the raw host bytes; make_recording.py names the files
// and writes manifest.json. See README.md.
//
// Exercises: two non-blocking streams with an event dependency, a synchronous
// H2D copy, a memset, a kernel taking a struct holding two device pointers,
// a kernel with 64 KiB of dynamic shared memory (cuFuncSetAttribute), a
// cluster launch (cuLaunchKernelEx, CLUSTER_DIMENSION 2), D2H copies of the
// results (bytes recorded for the bit-for-bit check).
#include <cooperative_groups.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <dlfcn.h>
#include <unistd.h>
#include <vector>

namespace cg = cooperative_groups;

__host__ __device__ static inline uint32_t mix(uint32_t x)
{
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    return x;
}

// params: a@0 (8), n@8 (4), seed@12 (4); total 16.
extern "C" __global__ void rc_fill(uint32_t *a, uint32_t n, uint32_t seed)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = mix(i ^ seed);
}

// params: out@0 (8), a@8 (8), b@16 (8), k@24 (4), n@28 (4); total 32.
extern "C" __global__ void rc_axpy(uint32_t *out, const uint32_t *a, const uint32_t *b, uint32_t k, uint32_t n)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * k + b[i];
}

struct Job {
    const uint32_t *src;
    uint32_t *dst;
    uint32_t n;
    uint32_t shift;
};

// params: j@0 (24: src@0, dst@8, n@16, shift@20), x@24 (4); total 28.
extern "C" __global__ void rc_struct(Job j, uint32_t x)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < j.n) j.dst[i] = (j.src[i] >> j.shift) ^ x;
}

// 64 KiB of dynamic shared memory: each block sums 16384 elements.
// params: in@0 (8), out@8 (8), n@16 (4); total 20.
extern "C" __global__ void rc_block_sum(const uint32_t *in, uint32_t *out, uint32_t n)
{
    extern __shared__ uint32_t sh[];
    const uint32_t per = 16384, base = blockIdx.x * per;
    for (uint32_t k = threadIdx.x; k < per; k += blockDim.x) sh[k] = base + k < n ? in[base + k] : 0;
    __syncthreads();
    uint32_t s = 0;
    for (uint32_t k = threadIdx.x; k < per; k += blockDim.x) s += sh[k];
    __syncthreads();
    sh[threadIdx.x] = s;
    __syncthreads();
    for (uint32_t w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = sh[0];
}

// Launched with clusters of 2 blocks. params: out@0 (8), in@8 (8), n@16 (4); total 20.
extern "C" __global__ void rc_cluster(uint32_t *out, const uint32_t *in, uint32_t n)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] + 1000u * cg::this_cluster().block_rank();
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

static FILE *T;
static long line_no = 1;
static uint64_t now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (uint64_t)t.tv_sec * 1000000000ull + t.tv_nsec; }
static std::string hx(uint64_t v) { char b[32]; snprintf(b, sizeof b, "\"0x%llx\"", (unsigned long long)v); return b; }
static std::string hexbytes(const void *p, size_t n)
{
    std::string s; char b[3];
    for (size_t i = 0; i < n; i++) { snprintf(b, 3, "%02x", ((const unsigned char *)p)[i]); s += b; }
    return s;
}
static void line(const char *type, const char *op, const char *name, uint64_t ts, const std::string &rest)
{
    fprintf(T, "{\"ts\":%llu,\"pid\":%d,\"tid\":%d,\"type\":\"%s\",\"op\":\"%s\",\"name\":\"%s\",%s}\n",
            (unsigned long long)ts, getpid(), getpid(), type, op, name, rest.c_str());
    line_no++;
}
static std::string dur(uint64_t t0) { char b[64]; snprintf(b, sizeof b, "\"ret\":0,\"duration_us\":%.3f", (now() - t0) / 1e3); return b; }

// The GPU timeline of the run, measured with CUDA events around each GPU
// operation (the recording's `gpu` lines: what CUPTI gives with
// --gpu-timestamps). The events are measurement only: not in the call lines.
struct GpuRec { cudaEvent_t a, b; const char *op, *name, *dir; size_t size; cudaStream_t s; };
static std::vector<GpuRec> G;
static cudaEvent_t BASE;
static uint64_t T_BASE;
static void gbeg(cudaStream_t s, const char *op, const char *name, size_t size = 0, const char *dir = nullptr)
{
    GpuRec g{nullptr, nullptr, op, name, dir, size, s};
    CK(cudaEventCreate(&g.a)); CK(cudaEventCreate(&g.b));
    CK(cudaEventRecord(g.a, s));
    G.push_back(g);
}
static void gend() { CK(cudaEventRecord(G.back().b, G.back().s)); }

// NVML's total energy counter (mJ), through dlopen: the recording's `power`
// lines around the GPU work (tracer samples it every 10 ms; two samples here).
static unsigned long long energy_mj()
{
    typedef int (*init_t)(void);
    typedef int (*get_t)(unsigned, void **);
    typedef int (*energy_t)(void *, unsigned long long *);
    static void *dev = nullptr;
    static energy_t energy = nullptr;
    if (!energy) {
        void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
        if (!h) return 0;
        init_t init = (init_t)dlsym(h, "nvmlInit_v2");
        get_t get = (get_t)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
        energy = (energy_t)dlsym(h, "nvmlDeviceGetTotalEnergyConsumption");
        if (!init || !get || !energy || init() != 0 || get(0, &dev) != 0) { energy = nullptr; return 0; }
    }
    unsigned long long e = 0;
    return energy(dev, &e) == 0 ? e : 0;
}
static void power_line()
{
    uint64_t t0 = now();
    unsigned long long e = energy_mj();
    uint64_t t1 = now();
    if (e) fprintf(T, "{\"ts\":%llu,\"pid\":0,\"tid\":0,\"type\":\"power\",\"op\":\"sample\",\"name\":\"nvml\",\"gpu\":0,\"energy_mj\":%llu}\n", (unsigned long long)(t0 + (t1 - t0) / 2), e);
}

struct Params { unsigned char b[64]; size_t n = 0;
    template <class T> void put(size_t off, T v) { memcpy(b + off, &v, sizeof v); if (off + sizeof v > n) n = off + sizeof v; }
};

static void launch_line(const char *name, uint64_t ts, uint64_t func, const char *kernel, dim3 g, dim3 bl, unsigned smem,
                        cudaStream_t s, const Params &p, size_t size, const std::string &extra_args = "")
{
    char b[512];
    snprintf(b, sizeof b, "\"args\":{\"f\":%s,\"hStream\":%s%s},\"func\":%s,\"kernel\":\"%s\",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"shared_mem\":%u,\"stream\":%s,",
             hx(func).c_str(), hx((uint64_t)s).c_str(), extra_args.c_str(), hx(func).c_str(), kernel, g.x, g.y, g.z, bl.x, bl.y, bl.z, smem, hx((uint64_t)s).c_str());
    line("kernel", "launch", name, ts, std::string(b) + "\"params\":\"" + hexbytes(p.b, size) + "\",\"params_from\":\"layout\"");
}

int main(int argc, char **argv)
{
    // replay_check DIR [REPEAT [LOG2_N]]: the chain of kernels REPEAT times on 2^LOG2_N elements.
    const char *dir = argc > 1 ? argv[1] : "replay_check.rec";
    const int repeat = argc > 2 ? atoi(argv[2]) : 1;
    const uint32_t n = 1u << (argc > 3 ? atoi(argv[3]) : 20), nsum = n / 16384;
    std::string tp = std::string(dir) + "/trace.jsonl";
    T = fopen(tp.c_str(), "w");
    if (!T) { perror(tp.c_str()); return 1; }
    CK(cudaFree(0));
    CK(cudaEventCreate(&BASE));
    CK(cudaEventRecord(BASE, 0));
    CK(cudaEventSynchronize(BASE));
    T_BASE = now();
    fprintf(T, "{\"type\":\"header\",\"format\":\"tracer-jsonl\",\"format_version\":1,\"command\":[\"replay_check\"],\"replayable\":{\"capture_data\":true,\"data_cap_bytes\":8589934592},\"note\":\"written by examples/replay_check/replay_check.cu, not by tracer\"}\n");
    const uint64_t LIB = 0x1000, F_FILL = 0x2001, F_AXPY = 0x2002, F_STRUCT = 0x2003, F_SUM = 0x2004, F_CLUSTER = 0x2005;
    uint64_t t = now();
    line("module", "library_load_data", "cuLibraryLoadData", t, "\"args\":{\"library\":" + hx(LIB) + "},\"image\":\"@IMAGE@\"," + dur(t));
    const char *names[] = {"rc_fill", "rc_axpy", "rc_struct", "rc_block_sum", "rc_cluster"};
    for (int k = 0; k < 5; k++) {
        t = now();
        line("module", "library_get_kernel", "cuLibraryGetKernel", t, "\"args\":{\"library\":" + hx(LIB) + ",\"name\":\"" + names[k] + "\"},\"handle\":" + hx(0x2001 + k) + ",\"kernel\":\"" + names[k] + "\"," + dur(t));
    }
    uint32_t *a, *b, *out, *dst, *sums, *res;
    uint32_t **bufs[] = {&a, &b, &out, &dst, &sums, &res};
    size_t sizes[] = {n * 4, n * 4, n * 4, n * 4, nsum * 4, n * 4};
    for (int k = 0; k < 6; k++) {
        t = now();
        CK(cudaMalloc(bufs[k], sizes[k]));
        char x[160]; snprintf(x, sizeof x, "\"args\":{\"dptr\":%s,\"bytesize\":%zu},\"ptr\":%s,\"size\":%zu,", hx((uint64_t)*bufs[k]).c_str(), sizes[k], hx((uint64_t)*bufs[k]).c_str(), sizes[k]);
        line("memory", "alloc", "cuMemAlloc_v2", t, x + dur(t));
    }
    std::vector<uint32_t> hb(n);
    for (uint32_t i = 0; i < n; i++) hb[i] = i * 7 + 3;
    power_line();
    t = now();
    gbeg(0, "memcpy", "memcpy_htod", n * 4, "h2d");
    CK(cudaMemcpy(b, hb.data(), n * 4, cudaMemcpyHostToDevice));
    gend();
    line("memcpy", "copy", "cuMemcpyHtoD_v2", t, "\"args\":{\"dstDevice\":" + hx((uint64_t)b) + ",\"srcHost\":" + hx((uint64_t)hb.data()) + ",\"ByteCount\":" + std::to_string(n * 4) + "},\"direction\":\"h2d\",\"dst\":" + hx((uint64_t)b) + ",\"src\":" + hx((uint64_t)hb.data()) + ",\"size\":" + std::to_string(n * 4) + ",\"data\":\"@DATA_B@\"," + dur(t));
    cudaStream_t s1, s2; cudaEvent_t ev;
    for (cudaStream_t *s : {&s1, &s2}) {
        t = now();
        CK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
        line("stream", "stream_create", "cuStreamCreate", t, "\"args\":{\"phStream\":" + hx((uint64_t)*s) + ",\"Flags\":\"0x1\"}," + dur(t));
    }
    t = now();
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    line("event", "event_create", "cuEventCreate", t, "\"args\":{\"phEvent\":" + hx((uint64_t)ev) + ",\"Flags\":\"0x2\"}," + dur(t));
    t = now();
    CK(cudaFuncSetAttribute(rc_block_sum, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536));
    line("module", "kernel_set_attribute", "cuKernelSetAttribute", t, "\"args\":{\"attrib\":8,\"val\":65536,\"kernel\":" + hx(F_SUM) + ",\"dev\":0}," + dur(t));

    for (int rep = 0; rep < repeat; rep++) {
    Params p;
    p.put(0, a); p.put(8, n); p.put(12, 0x1234u);
    gbeg(s1, "kernel", "rc_fill");
    t = now(); rc_fill<<<n / 256, 256, 0, s1>>>(a, n, 0x1234u); CK(cudaGetLastError());
    gend();
    launch_line("cuLaunchKernel", t, F_FILL, "rc_fill", dim3(n / 256), dim3(256), 0, s1, p, 16);
    t = now(); CK(cudaEventRecord(ev, s1));
    line("event", "event_record", "cuEventRecord", t, "\"args\":{\"hEvent\":" + hx((uint64_t)ev) + ",\"hStream\":" + hx((uint64_t)s1) + "},\"event\":" + hx((uint64_t)ev) + ",\"stream\":" + hx((uint64_t)s1));
    t = now(); CK(cudaStreamWaitEvent(s2, ev, 0));
    line("sync", "stream_wait_event", "cuStreamWaitEvent", t, "\"args\":{\"hStream\":" + hx((uint64_t)s2) + ",\"hEvent\":" + hx((uint64_t)ev) + ",\"Flags\":\"0x0\"},\"event\":" + hx((uint64_t)ev) + ",\"stream\":" + hx((uint64_t)s2));
    p = Params(); p.put(0, out); p.put(8, a); p.put(16, b); p.put(24, 3u); p.put(28, n);
    gbeg(s2, "kernel", "rc_axpy");
    t = now(); rc_axpy<<<n / 256, 256, 0, s2>>>(out, a, b, 3u, n); CK(cudaGetLastError());
    gend();
    launch_line("cuLaunchKernel", t, F_AXPY, "rc_axpy", dim3(n / 256), dim3(256), 0, s2, p, 32);
    gbeg(s2, "memset", "memset", n * 4);
    t = now(); CK(cudaMemsetAsync(dst, 0xab, n * 4, s2));
    gend();
    line("memset", "set", "cuMemsetD8Async", t, "\"args\":{\"dstDevice\":" + hx((uint64_t)dst) + ",\"uc\":171,\"N\":" + std::to_string(n * 4) + ",\"hStream\":" + hx((uint64_t)s2) + "},\"dst\":" + hx((uint64_t)dst) + ",\"size\":" + std::to_string(n * 4) + ",\"stream\":" + hx((uint64_t)s2) + "," + dur(t));
    Job j{out, dst, n, 2};
    p = Params(); p.put(0, j); p.put(24, 0x5a5a5a5au);
    gbeg(s2, "kernel", "rc_struct");
    t = now(); rc_struct<<<n / 256, 256, 0, s2>>>(j, 0x5a5a5a5au); CK(cudaGetLastError());
    gend();
    launch_line("cuLaunchKernel", t, F_STRUCT, "rc_struct", dim3(n / 256), dim3(256), 0, s2, p, 28);
    p = Params(); p.put(0, (const uint32_t *)dst); p.put(8, sums); p.put(16, n);
    gbeg(s2, "kernel", "rc_block_sum");
    t = now(); rc_block_sum<<<nsum, 256, 65536, s2>>>(dst, sums, n); CK(cudaGetLastError());
    gend();
    launch_line("cuLaunchKernel", t, F_SUM, "rc_block_sum", dim3(nsum), dim3(256), 65536, s2, p, 20);
    {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(n / 256); cfg.blockDim = dim3(256); cfg.stream = s2;
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeClusterDimension;
        at[0].val.clusterDim.x = 2; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
        cfg.attrs = at; cfg.numAttrs = 1;
        p = Params(); p.put(0, res); p.put(8, (const uint32_t *)dst); p.put(16, n);
        gbeg(s2, "kernel", "rc_cluster");
        t = now(); CK(cudaLaunchKernelEx(&cfg, rc_cluster, res, (const uint32_t *)dst, n));
        gend();
        launch_line("cuLaunchKernelEx", t, F_CLUSTER, "rc_cluster", dim3(n / 256), dim3(256), 0, s2, p, 20,
                    ",\"config\":{\"gridDim\":[" + std::to_string(n / 256) + ",1,1],\"blockDim\":[256,1,1],\"sharedMemBytes\":0,\"hStream\":" + hx((uint64_t)s2) + ",\"numAttrs\":1,\"attrs\":[{\"id\":4,\"name\":\"CLUSTER_DIMENSION\",\"value\":[2,1,1]}]}");
    }
    }
    uint32_t *hsums, *hres;
    CK(cudaMallocHost(&hsums, nsum * 4));
    CK(cudaMallocHost(&hres, n * 4));
    struct { uint32_t *h; uint32_t *d; size_t sz; const char *tag; } d2h[] = {{hsums, sums, nsum * 4, "@DATA_SUMS@"}, {hres, res, n * 4, "@DATA_RES@"}};
    for (auto &c : d2h) {
        gbeg(s2, "memcpy", "memcpy_dtoh", c.sz, "d2h");
        t = now(); CK(cudaMemcpyAsync(c.h, c.d, c.sz, cudaMemcpyDeviceToHost, s2));
        gend();
        line("memcpy", "copy", "cuMemcpyDtoHAsync_v2", t, "\"args\":{\"dstHost\":" + hx((uint64_t)c.h) + ",\"srcDevice\":" + hx((uint64_t)c.d) + ",\"ByteCount\":" + std::to_string(c.sz) + ",\"hStream\":" + hx((uint64_t)s2) + "},\"direction\":\"d2h\",\"dst\":" + hx((uint64_t)c.h) + ",\"src\":" + hx((uint64_t)c.d) + ",\"size\":" + std::to_string(c.sz) + ",\"stream\":" + hx((uint64_t)s2) + ",\"data\":\"" + c.tag + "\"," + dur(t));
    }
    t = now(); CK(cudaStreamSynchronize(s2));
    line("sync", "stream_synchronize", "cuStreamSynchronize", t, "\"args\":{\"hStream\":" + hx((uint64_t)s2) + "},\"stream\":" + hx((uint64_t)s2) + "," + dur(t));
    CK(cudaDeviceSynchronize());
    power_line();
    for (auto &g : G) {
        float ma, mb;
        CK(cudaEventElapsedTime(&ma, BASE, g.a));
        CK(cudaEventElapsedTime(&mb, BASE, g.b));
        uint64_t ts = T_BASE + (uint64_t)(ma * 1e6), end = T_BASE + (uint64_t)(mb * 1e6);
        fprintf(T, "{\"ts\":%llu,\"end_ts\":%llu,\"duration_us\":%.3f,\"pid\":%d,\"tid\":0,\"type\":\"gpu\",\"op\":\"%s\",\"name\":\"%s\",\"source\":\"cuda_events\",\"device\":0,\"stream\":%s",
                (unsigned long long)ts, (unsigned long long)end, (end - ts) / 1e3, getpid(), g.op, g.name, hx((uint64_t)g.s).c_str());
        if (g.size) fprintf(T, ",\"size\":%zu", g.size);
        if (g.dir) fprintf(T, ",\"direction\":\"%s\"", g.dir);
        fprintf(T, "}\n");
    }
    fprintf(T, "{\"type\":\"footer\",\"calls\":%ld}\n", line_no - 2);
    fclose(T);
    // Known outputs, computed on the CPU.
    uint64_t bad = 0;
    std::vector<uint32_t> d(n);
    for (uint32_t i = 0; i < n; i++) d[i] = ((mix(i ^ 0x1234u) * 3u + (i * 7 + 3)) >> 2) ^ 0x5a5a5a5au;
    for (uint32_t blk = 0; blk < nsum; blk++) {
        uint32_t s = 0;
        for (uint32_t k = 0; k < 16384; k++) s += d[blk * 16384 + k];
        bad += s != hsums[blk];
    }
    for (uint32_t i = 0; i < n; i++) bad += hres[i] != d[i] + 1000u * ((i / 256) % 2);
    printf("replay_check: %u sums, %u results, %llu differ from the CPU's values\n", nsum, n, (unsigned long long)bad);
    // Raw host bytes for make_recording.py.
    struct { const char *f; const void *p; size_t n; } raw[] = {{"raw_b.bin", hb.data(), n * 4}, {"raw_sums.bin", hsums, nsum * 4}, {"raw_res.bin", hres, n * 4}};
    for (auto &r : raw) {
        FILE *f = fopen((std::string(dir) + "/" + r.f).c_str(), "wb");
        fwrite(r.p, 1, r.n, f);
        fclose(f);
    }
    return bad != 0;
}
