#!/usr/bin/env bash
# Explicit CUDA graphs under --replayable: recorded and replayed (issue 17). One
# device call (kind nvidia-h100-x1, as root, from the repo root, with
# .device-bin/{tracer,replay} carried: `cargo xtask build --release` and `cargo build --release -p replay` (the xtask builds no replay) here,
# then copy target/release/{tracer,replay} to .device-bin/):
#
#   bash experiments/graphs/gpu_explicit_graphs.sh
#
# Builds a small driver-API program (nvcc): kernel axpb(y, x, a, b, n)
# (y = a*x + b) from a cubin, an explicit graph of
#   P3 axpb(y, y, 1, 5)   added first, made to wait for C by cuGraphAddDependencies
#   P1 axpb(y, x, 2, 1)
#   C  child graph { axpb(y, y, 3, 0) }, after P1
#   M  memset node z = 1.0f (1-D), P4 axpb(z, z, 1, 1) after M
#   W  memcpy node w <- y from byte 1024 on (one row), after P3
#   Q  2-D memset node: 64 rows of 256 floats = 3.0f at a 4096-byte pitch in q
# instantiated and launched twice, then P3 set to b = 7 in the exec
# (cuGraphExecKernelNodeSetParams), launched twice more; then the graph
# cloned (cuGraphClone), the clone's P3 found (cuGraphNodeFindInClone) and
# set to b = 9, the clone instantiated and launched once; then a plain
# cuMemsetD2D32Async (32 rows of 128 floats = 5.0f from byte 2048 of q);
# y, z, w and q copied back and checked (y = 3(2x+1)+9, z = 2, w = y shifted
# by 256 floats, q's rows). Records it with --replayable --capture-data --gpu-timestamps,
# prints the node lines' parameter bytes, `replay plan`, and replays it, the
# execs rebuilt as CUDA graphs (default) and with --expand-graphs (the D2H
# copies compared bit for bit in both).
# Expect: every kernel node line with `params` (params_from layout), `replay
# plan`: "graph launches: 5, planned 5 (20 kernels, replayed 20; 15
# copies/sets, replayed 15), not replayed 0" and "as rebuilt CUDA graphs 5
# (3 execs)", coverage 100 %, the replay's D2H copies identical (y holds
# the clone's b = 9: a replay that missed the clone's change would differ).
set -uo pipefail
T=$(realpath .device-bin/tracer)
R=$(realpath .device-bin/replay)
OUT=${OUT:-/tmp/gx-out}
mkdir -p "$OUT"
W=$(mktemp -d)
log=$OUT/log_explicit_graphs.txt
cat > "$W/kern.cu" <<'EOF'
extern "C" __global__ void axpb(float *y, const float *x, float a, float b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + b;
}
EOF
cat > "$W/main.c" <<'EOF'
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define CK(x) do { CUresult r_ = (x); if (r_) { fprintf(stderr, "%s: %d\n", #x, r_); exit(1); } } while (0)
enum { N = 1 << 20 };
static CUDA_KERNEL_NODE_PARAMS node(CUfunction f, void **params) {
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.func = f;
    p.gridDimX = N / 256; p.gridDimY = 1; p.gridDimZ = 1;
    p.blockDimX = 256; p.blockDimY = 1; p.blockDimZ = 1;
    p.kernelParams = params;
    return p;
}
int main(int argc, char **argv) {
    CUdevice dev; CUcontext ctx; CUmodule mod; CUfunction f; CUstream s;
    CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoad(&mod, argv[1])); CK(cuModuleGetFunction(&f, mod, "axpb"));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr x, y, z, w, q;
    CK(cuMemAlloc(&x, N * 4)); CK(cuMemAlloc(&y, N * 4)); CK(cuMemAlloc(&z, N * 4));
    CK(cuMemAlloc(&w, N * 4)); CK(cuMemAlloc(&q, 64 * 4096));
    CK(cuMemsetD32(w, 0, N)); CK(cuMemsetD32(q, 0, 64 * 1024));
    float *h = malloc(N * 4), *hz = malloc(N * 4);
    for (int i = 0; i < N; i++) h[i] = (float)(i % 1000) * 0.25f;
    CK(cuMemcpyHtoD(x, h, N * 4));
    int n = N;
    float a1 = 2, b1 = 1, a3 = 1, b3 = 5, ac = 3, bc = 0, a4 = 1, b4 = 1;
    void *p1[] = {&y, &x, &a1, &b1, &n}, *p3[] = {&y, &y, &a3, &b3, &n};
    void *pc[] = {&y, &y, &ac, &bc, &n}, *p4[] = {&z, &z, &a4, &b4, &n};
    CUgraph g, child; CUgraphNode P1, P3, C, CK1, M, P4; CUgraphExec e;
    CK(cuGraphCreate(&g, 0)); CK(cuGraphCreate(&child, 0));
    CUDA_KERNEL_NODE_PARAMS k;
    k = node(f, pc); CK(cuGraphAddKernelNode(&CK1, child, NULL, 0, &k));
    k = node(f, p3); CK(cuGraphAddKernelNode(&P3, g, NULL, 0, &k));
    k = node(f, p1); CK(cuGraphAddKernelNode(&P1, g, NULL, 0, &k));
    CK(cuGraphAddChildGraphNode(&C, g, &P1, 1, child));
    CK(cuGraphAddDependencies(g, &C, &P3, NULL, 1)); /* CUDA 13: the _v2 form with edge data */
    CUDA_MEMSET_NODE_PARAMS ms;
    memset(&ms, 0, sizeof ms);
    ms.dst = z; ms.pitch = 0; ms.value = 0x3f800000u; ms.elementSize = 4; ms.width = N; ms.height = 1;
    CK(cuGraphAddMemsetNode(&M, g, NULL, 0, &ms, ctx));
    k = node(f, p4); CK(cuGraphAddKernelNode(&P4, g, &M, 1, &k));
    CUgraphNode W, Q;
    CUDA_MEMCPY3D cp;
    memset(&cp, 0, sizeof cp);
    cp.srcMemoryType = CU_MEMORYTYPE_DEVICE; cp.srcDevice = y; cp.srcXInBytes = 1024;
    cp.dstMemoryType = CU_MEMORYTYPE_DEVICE; cp.dstDevice = w;
    cp.WidthInBytes = N * 4 - 1024; cp.Height = 1; cp.Depth = 1;
    CK(cuGraphAddMemcpyNode(&W, g, &P3, 1, &cp, ctx));
    CUDA_MEMSET_NODE_PARAMS m2;
    memset(&m2, 0, sizeof m2);
    m2.dst = q; m2.pitch = 4096; m2.value = 0x40400000u; m2.elementSize = 4; m2.width = 256; m2.height = 64;
    CK(cuGraphAddMemsetNode(&Q, g, NULL, 0, &m2, ctx));
    CK(cuGraphInstantiateWithFlags(&e, g, 0));
    for (int i = 0; i < 2; i++) CK(cuGraphLaunch(e, s));
    b3 = 7;
    k = node(f, p3); CK(cuGraphExecKernelNodeSetParams(e, P3, &k));
    b3 = -1; /* the recorded bytes must be those at the set call */
    for (int i = 0; i < 2; i++) CK(cuGraphLaunch(e, s));
    /* A clone of the graph whose copy of P3 is found and set to b = 9, launched once. */
    CUgraph g2; CUgraphNode P3c; CUgraphExec e2;
    CK(cuGraphClone(&g2, g));
    CK(cuGraphNodeFindInClone(&P3c, P3, g2));
    b3 = 9;
    k = node(f, p3); CK(cuGraphKernelNodeSetParams(P3c, &k));
    b3 = -1;
    CK(cuGraphInstantiateWithFlags(&e2, g2, 0));
    CK(cuGraphLaunch(e2, s));
    CK(cuMemsetD2D32Async(q + 2048, 4096, 0x40a00000u, 128, 32, s));
    CK(cuStreamSynchronize(s));
    float *hy = malloc(N * 4), *hw = malloc(N * 4), *hq = malloc(64 * 4096);
    CK(cuMemcpyDtoH(hy, y, N * 4)); CK(cuMemcpyDtoH(hz, z, N * 4));
    CK(cuMemcpyDtoH(hw, w, N * 4)); CK(cuMemcpyDtoH(hq, q, 64 * 4096));
    int bad = 0;
    for (int i = 0; i < N; i++) {
        float want = 3.0f * (2.0f * h[i] + 1.0f) + 9.0f;
        if (hy[i] != want || hz[i] != 2.0f) bad++;
        if (i < N - 256 && hw[i] != hy[i + 256]) bad++;
    }
    for (int r = 0; r < 64; r++)
        for (int c = 0; c < 1024; c++) {
            float want = c < 256 ? 3.0f : (r < 32 && c >= 512 && c < 640) ? 5.0f : 0.0f;
            if (hq[r * 1024 + c] != want) bad++;
        }
    printf("explicit graph: %d wrong of %d (y[1] = %g, z[1] = %g)\n", bad, N, hy[1], hz[1]);
    return bad != 0;
}
EOF
{
nvidia-smi -L
nvcc --version | tail -1
(cd "$W" && nvcc -cubin -arch=native -o kern.cubin kern.cu && nvcc -o explicit main.c -lcuda) || { echo "build failed"; exit 1; }
"$W/explicit" "$W/kern.cubin"; echo "untraced exit: $?"
rm -rf /tmp/gx.rec
timeout 120 "$T" record --replayable --capture-data --gpu-timestamps -q --force -o /tmp/gx.rec -- "$W/explicit" "$W/kern.cubin"; echo "record exit: $?"
tr=$(ls /tmp/gx.rec/trace.jsonl* | head -1)
case "$tr" in *.zst) zstd -dc "$tr" ;; *) cat "$tr" ;; esac > "$W/trace.jsonl"
echo "## node lines (name node kernel grid params params_from params_error)"
python3 - "$W/trace.jsonl" <<'EOF'
import json, sys
for l in open(sys.argv[1]):
    v = json.loads(l)
    if v.get("type") == "graph" and "Node" in v.get("name", ""):
        print(v["name"], v.get("node"), v.get("node_type"), v.get("kernel"), v.get("grid"),
              v.get("params"), v.get("params_from"), v.get("params_error"))
EOF
grep -c '"name":"cuGraphNodeFindInClone"' "$W/trace.jsonl" | sed 's/^/cuGraphNodeFindInClone lines: /'
grep '"name":"cuGraphNodeFindInClone"' "$W/trace.jsonl" | head -1
"$R" plan /tmp/gx.rec | grep -E "launches|graph|coverage|replayed"
timeout 200 "$R" /tmp/gx.rec --iterations 3 --warmup 1; echo "replay exit: $?"
cp /tmp/gx.rec/replay-report.json "$OUT/explicit_graph_replay_report.json" 2>/dev/null
echo "## the same, --expand-graphs"
timeout 200 "$R" /tmp/gx.rec --iterations 3 --warmup 1 --expand-graphs 2>&1 | grep -E "graph|output|identical|differ|coverage|error"; echo "replay exit: $?"
} > "$log" 2>&1
tail -c 9000 "$log"
