/*
 * Test program for tracer's CUDA graph support (../root_graphs.rs): builds
 * two graphs on the fake libcuda and launches them.
 *
 * 1. Stream capture on stream 0x5100: a launch of cap_a (grid 2, int
 *    parameter 7), a 256-byte host-to-device copy, a memset of 16 words, an
 *    event record that stream 0x5200 waits on, a launch of cap_b there, and
 *    the join back (record on 0x5200, wait on 0x5100). Graph 0x90001,
 *    instantiated as exec 0x80001.
 * 2. An explicit graph 0x610000: kernel node node_k (grid 1), a child graph
 *    node (graph 0x611000: kernel child_k, then a memset node after it)
 *    after it, and node_k again (grid 4) after the child. Exec 0x80011.
 * 3. Exec 0x80001 launched 3 times on 0x5300 and 2 times on 0x5400; exec
 *    0x80011 2 times on 0x5300, then its last node set to grid 8
 *    (cuGraphExecKernelNodeSetParams_v2), then 2 times on 0x5400.
 * 4. Only with an argument (`graphs FIXTURE_DIR`, for `--replayable`): the
 *    fixture k_pointers (kernels.sm_90.cubin from FIXTURE_DIR; parameters
 *    out, in, n) in an explicit graph 0x612000 with child graph 0x613000.
 *    Every node passes out = 0x7f0000000000, in = 0x7f0000200000 and its own
 *    n, changed in the caller's variable right after each call (the
 *    recorder must read the bytes when the node is added or set):
 *      child: node 0xa0050 (cuGraphAddKernelNode_v2, grid 5, n 50)
 *      0xa0060 (grid 3, n 3), added first, runs last: a later
 *              cuGraphAddDependencies makes it wait for the child node;
 *      0xa0070 (cuGraphAddNode_v2 of type kernel, grid 1, n 1), then set to
 *              grid 2, n 2 by cuGraphKernelNodeSetParams_v2;
 *      0xa0080 the child graph node, after 0xa0070.
 *    Exec 0x80021 launched 2 times on 0x5300, node 0xa0060 set to grid 4,
 *    n 4 (cuGraphExecKernelNodeSetParams_v2), then 2 times on 0x5400.
 *    Last, the graph's node 0xa0060 set to grid 9, n 9 through `extra` (a
 *    20-byte buffer) with the v1 struct (cuGraphKernelNodeSetParams): the
 *    exec, already instantiated, does not change. Then a memset node 0xa0090
 *    (cuGraphAddNode_v2 of type memset: 8 words of 5 at 0x7f0000000300)
 *    after 0xa0060: not a kernel node, no parameter bytes.
 *
 * Prints nothing unless a call fails (exit status 1).
 */
#include <stdio.h>
#include <string.h>

#include "fakecuda.h"

#define H(v) ((void *)(uintptr_t)(v))
static int failures;
#define OK(call)                                                                                                       \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        if (r_ != 0) {                                                                                                 \
            fprintf(stderr, "graphs: %s returned %d\n", #call, r_);                                                 \
            failures++;                                                                                                \
        }                                                                                                              \
    } while (0)

/* Section 4 (see the top). */
static void explicit_with_params(const char *fixtures) {
    char path[4096];
    snprintf(path, sizeof path, "%s/kernels.sm_90.cubin", fixtures);
    CUmodule mod = 0;
    CUfunction kp = 0;
    OK(cuModuleLoad(&mod, path));
    OK(cuModuleGetFunction(&kp, mod, "k_pointers"));
    CUdeviceptr out = 0x7f0000000000ULL, in = 0x7f0000200000ULL;
    int n = 0;
    void *params[] = {&out, &in, &n};
    CUgraph g = 0, child = 0;
    CUgraphNode c1 = 0, last = 0, first = 0, sub = 0;
    CUgraphExec x = 0;
    OK(cuGraphCreate(&g, 0));
    OK(cuGraphCreate(&child, 0));
    CUDA_KERNEL_NODE_PARAMS k = {kp, 5, 1, 1, 32, 1, 1, 0, params, 0, 0, 0};
    n = 50;
    OK(cuGraphAddKernelNode_v2(&c1, child, 0, 0, &k));
    n = 3;
    k.gridDimX = 3;
    OK(cuGraphAddKernelNode_v2(&last, g, 0, 0, &k));
    CUgraphNodeParams np;
    memset(&np, 0, sizeof np);
    np.type = 0;
    np.u.kernel = k;
    np.u.kernel.gridDimX = 1;
    n = 1;
    OK(cuGraphAddNode_v2(&first, g, 0, 0, 0, &np));
    n = 2;
    k.gridDimX = 2;
    OK(cuGraphKernelNodeSetParams_v2(first, &k));
    OK(cuGraphAddChildGraphNode(&sub, g, &first, 1, child));
    OK(cuGraphAddDependencies(g, &sub, &last, 1));
    n = -1;
    OK(cuGraphInstantiateWithFlags(&x, g, 0));
    for (int i = 0; i < 2; i++)
        OK(cuGraphLaunch(x, H(0x5300)));
    n = 4;
    k.gridDimX = 4;
    OK(cuGraphExecKernelNodeSetParams_v2(x, last, &k));
    n = -1;
    for (int i = 0; i < 2; i++)
        OK(cuGraphLaunch(x, H(0x5400)));
    unsigned char buf[20];
    int nine = 9;
    memcpy(buf, &out, 8);
    memcpy(buf + 8, &in, 8);
    memcpy(buf + 16, &nine, 4);
    size_t size = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    CUDA_KERNEL_NODE_PARAMS_v1 v1 = {kp, 9, 1, 1, 32, 1, 1, 0, 0, extra};
    OK(cuGraphKernelNodeSetParams(last, &v1));
    memset(buf, 0xff, sizeof buf);
    CUgraphNode set = 0;
    memset(&np, 0, sizeof np);
    np.type = 2;
    np.u.memset.dst = 0x7f0000000300ULL;
    np.u.memset.value = 5;
    np.u.memset.elementSize = 4;
    np.u.memset.width = 8;
    np.u.memset.height = 1;
    OK(cuGraphAddNode_v2(&set, g, &last, 0, 1, &np));
}

int main(int argc, char **argv) {
    CUmodule mod = 0;
    CUfunction cap_a = 0, cap_b = 0, node_k = 0, child_k = 0;
    OK(cuInit(0));
    OK(cuModuleLoad(&mod, "graphs.cubin"));
    OK(cuModuleGetFunction(&cap_a, mod, "cap_a"));
    OK(cuModuleGetFunction(&cap_b, mod, "cap_bb"));
    OK(cuModuleGetFunction(&node_k, mod, "node_kkk"));
    OK(cuModuleGetFunction(&child_k, mod, "child_kkkk"));
    int seven = 7;
    void *params[] = {&seven};
    static char host[256];

    /* 1. stream capture */
    CUstream s1 = H(0x5100), s2 = H(0x5200);
    CUevent e1 = H(0xee100), e2 = H(0xee200);
    CUgraph g1 = 0;
    CUgraphExec x1 = 0;
    OK(cuStreamBeginCapture_v2(s1, 0));
    OK(cuLaunchKernel(cap_a, 2, 1, 1, 64, 1, 1, 0, s1, params, 0));
    OK(cuMemcpyHtoDAsync_v2(0x7f0000000000ULL, host, sizeof host, s1));
    OK(cuMemsetD32Async(0x7f0000000100ULL, 0, 16, s1));
    OK(cuEventRecord(e1, s1));
    OK(cuStreamWaitEvent(s2, e1, 0));
    OK(cuLaunchKernel(cap_b, 3, 1, 1, 32, 1, 1, 0, s2, params, 0));
    OK(cuEventRecord(e2, s2));
    OK(cuStreamWaitEvent(s1, e2, 0));
    OK(cuStreamEndCapture(s1, &g1));
    OK(cuGraphInstantiateWithFlags(&x1, g1, 0));

    /* 2. explicit graph with a child graph */
    CUgraph g2 = 0, g3 = 0;
    CUgraphNode c1 = 0, c2 = 0, n1 = 0, n2 = 0, n3 = 0;
    CUgraphExec x2 = 0;
    OK(cuGraphCreate(&g2, 0));
    OK(cuGraphCreate(&g3, 0));
    CUDA_KERNEL_NODE_PARAMS kc = {child_k, 5, 1, 1, 128, 1, 1, 0, params, 0, 0, 0};
    OK(cuGraphAddKernelNode_v2(&c1, g3, 0, 0, &kc));
    CUDA_MEMSET_NODE_PARAMS ms = {0x7f0000000200ULL, 0, 0, 4, 32, 1};
    OK(cuGraphAddMemsetNode(&c2, g3, &c1, 1, &ms, 0));
    CUDA_KERNEL_NODE_PARAMS kn = {node_k, 1, 1, 1, 32, 1, 1, 0, params, 0, 0, 0};
    OK(cuGraphAddKernelNode_v2(&n1, g2, 0, 0, &kn));
    OK(cuGraphAddChildGraphNode(&n2, g2, &n1, 1, g3));
    kn.gridDimX = 4;
    OK(cuGraphAddKernelNode_v2(&n3, g2, &n2, 1, &kn));
    OK(cuGraphInstantiateWithFlags(&x2, g2, 0));

    /* 3. launches on two streams, an exec update between them */
    for (int i = 0; i < 3; i++)
        OK(cuGraphLaunch(x1, H(0x5300)));
    for (int i = 0; i < 2; i++)
        OK(cuGraphLaunch(x1, H(0x5400)));
    for (int i = 0; i < 2; i++)
        OK(cuGraphLaunch(x2, H(0x5300)));
    kn.gridDimX = 8;
    OK(cuGraphExecKernelNodeSetParams_v2(x2, n3, &kn));
    for (int i = 0; i < 2; i++)
        OK(cuGraphLaunch(x2, H(0x5400)));
    if (argc > 1)
        explicit_with_params(argv[1]);
    OK(cuCtxSynchronize());
    return failures ? 1 : 0;
}
