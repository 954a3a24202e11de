/* The `all` scenario's graph construction calls (included by driver.c):
 * every graph function of the table once, with the arguments
 * ../root_uprobes.rs expects (handles from fakegraph.c's table). */
static void graph_calls_all(CUfunction f, CUfunction f2, void **params) {
    CUgraph g = 0, sub = 0, clone = 0, captured = 0;
    CUgraphNode k1 = 0, k2 = 0, cp = 0, ms = 0, er = 0, ew = 0, child = 0, empty = 0, gn = 0, gn2 = 0;
    CUgraphExec ge = 0;
    CUstreamCaptureStatus st = 0;
    cuuint64_t id = 0;
    const CUgraphNode *deps = 0;
    const CUgraphEdgeData *edges = 0;
    size_t nd = 0;
    CUstreamCaptureMode mode = 1;
    OK(cuGraphCreate(&g, 0));
    OK(cuStreamBeginCaptureToGraph(H(0x5007), g, 0, 0, 0, 1));
    OK(cuStreamGetCaptureInfo_v2(H(0x5007), &st, &id, &captured, &deps, &nd));
    OK(cuStreamGetCaptureInfo_v3(H(0x5007), &st, &id, &captured, &deps, &edges, &nd));
    OK(cuStreamEndCapture(H(0x5007), &captured));
    OK(cuThreadExchangeStreamCaptureMode(&mode));
    CUDA_KERNEL_NODE_PARAMS_v1 kp1 = {f, 2, 1, 1, 64, 1, 1, 128, params, 0};
    OK(cuGraphAddKernelNode(&k1, g, 0, 0, &kp1));
    CUDA_KERNEL_NODE_PARAMS kp2 = {f2, 3, 1, 1, 32, 1, 1, 0, params, 0, 0, 0};
    OK(cuGraphAddKernelNode_v2(&k2, g, &k1, 1, &kp2));
    CUDA_MEMCPY3D c3;
    memset(&c3, 0, sizeof c3);
    c3.srcMemoryType = 1; /* host */
    c3.srcHost = H(0x10000000);
    c3.dstMemoryType = 2; /* device */
    c3.dstDevice = 0x7f0000000000ULL;
    c3.WidthInBytes = 256, c3.Height = 1, c3.Depth = 1;
    OK(cuGraphAddMemcpyNode(&cp, g, &k2, 1, &c3, H(0xc2000)));
    CUDA_MEMSET_NODE_PARAMS m = {0x7f0000000000ULL, 0, 0x5a, 4, 64, 1};
    OK(cuGraphAddMemsetNode(&ms, g, 0, 0, &m, H(0xc2000)));
    OK(cuGraphAddEventRecordNode(&er, g, &cp, 1, H(0xee000)));
    OK(cuGraphAddEventWaitNode(&ew, g, 0, 0, H(0xee000)));
    OK(cuGraphCreate(&sub, 0));
    OK(cuGraphAddChildGraphNode(&child, g, 0, 0, sub));
    CUgraphNode two[2] = {ms, child};
    OK(cuGraphAddEmptyNode(&empty, g, two, 2));
    CUgraphNodeParams np;
    memset(&np, 0, sizeof np);
    np.type = 0;
    np.u.kernel = kp2;
    np.u.kernel.gridDimX = 4;
    OK(cuGraphAddNode(&gn, g, &empty, 1, &np));
    CUgraphNodeParams mp;
    memset(&mp, 0, sizeof mp);
    mp.type = 2;
    mp.u.memset = m;
    OK(cuGraphAddNode_v2(&gn2, g, &empty, 0, 1, &mp));
    OK(cuGraphAddDependencies(g, &k1, &ms, 1));
    OK(cuGraphAddDependencies_v2(g, &k2, &ms, 0, 1));
    OK(cuGraphKernelNodeSetParams(k1, &kp1));
    OK(cuGraphKernelNodeSetParams_v2(k2, &kp2));
    OK(cuGraphNodeSetParams(gn, &np));
    OK(cuGraphClone(&clone, g));
    CUgraphNode k1_clone;
    OK(cuGraphNodeFindInClone(&k1_clone, k1, clone));
    OK(cuGraphInstantiate_v2(&ge, g, 0, 0, 0));
    OK(cuGraphExecKernelNodeSetParams(ge, k1, &kp1));
    OK(cuGraphExecKernelNodeSetParams_v2(ge, k2, &kp2));
    OK(cuGraphExecNodeSetParams(ge, gn, &np));
    OK(cuGraphExecUpdate_v2(ge, clone, 0));
    OK(cuGraphDestroyNode(gn2));
    (void)er, (void)ew;
}
