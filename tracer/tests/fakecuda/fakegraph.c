/* The fake libcuda's graph construction functions (included by fakecuda.c).
 * Values returned:
 *   cuGraphCreate             0x610000 + 0x1000 * n (n: graphs created so far)
 *   cuGraphClone              0x620000 + 0x1000 * n (n: clones so far)
 *   cuGraphNodeFindInClone    the original node + 0x100000
 *   cuGraphAdd*Node*          0xa0000 + 0x10 * k (k: nodes added so far)
 *   cuGraphInstantiate_v2     0x80003 + 0x10 * n (n: its calls so far)
 *   cuStreamGetCaptureInfo_v2/_v3 status 1 (active), id 7, graph 0x90001,
 *                             no dependencies
 *   cuThreadExchangeStreamCaptureMode swaps *mode with the thread's mode
 *                             (initially 0, global)
 * Everything else returns CUDA_SUCCESS and writes nothing. */

static unsigned long fake_graphs, fake_clones, fake_nodes, fake_instantiates_v2;
static __thread CUstreamCaptureMode fake_capture_mode;

static CUresult fake_node(CUgraphNode *out, const CUgraphNode *deps, size_t n) {
    fake_calls++;
    for (size_t i = 0; i < n; i++)
        fake_sink += (uintptr_t)deps[i];
    *out = H(0xa0000 + 0x10 * fake_nodes++);
    return CUDA_SUCCESS;
}

API CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
                                         const CUgraphEdgeData *dependencyData, size_t numDependencies, int mode) {
    fake_calls++;
    fake_sink = (uintptr_t)hStream + (uintptr_t)hGraph + (uintptr_t)dependencies + (uintptr_t)dependencyData +
                numDependencies + mode;
    return CUDA_SUCCESS;
}

/* Shared bodies: an exported function calling another would be probed twice. */
static CUresult capture_info(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
                             CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out) {
    fake_calls++;
    fake_sink = (uintptr_t)hStream;
    *captureStatus_out = 1;
    if (id_out)
        *id_out = 7;
    if (graph_out)
        *graph_out = H(0x90001);
    if (dependencies_out)
        *dependencies_out = 0;
    if (numDependencies_out)
        *numDependencies_out = 0;
    return CUDA_SUCCESS;
}

API CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                       cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **dependencies_out,
                                       size_t *numDependencies_out) {
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, numDependencies_out);
}

API CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                       cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **dependencies_out,
                                       const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out) {
    if (edgeData_out)
        *edgeData_out = 0;
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, numDependencies_out);
}

API CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
    fake_calls++;
    CUstreamCaptureMode old = fake_capture_mode;
    fake_capture_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

API CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags) {
    fake_calls++;
    fake_sink = flags;
    *phGraph = H(0x610000 + 0x1000 * fake_graphs++);
    return CUDA_SUCCESS;
}

API CUresult cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph) {
    fake_calls++;
    fake_sink = (uintptr_t)originalGraph;
    *phGraphClone = H(0x620000 + 0x1000 * fake_clones++);
    return CUDA_SUCCESS;
}

API CUresult cuGraphNodeFindInClone(CUgraphNode *phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph) {
    fake_calls++;
    fake_sink = (uintptr_t)hClonedGraph;
    *phNode = H((uintptr_t)hOriginalNode + 0x100000);
    return CUDA_SUCCESS;
}

API CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                  size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams) {
    fake_sink = (uintptr_t)hGraph + nodeParams->gridDimX;
    return fake_node(phGraphNode, dependencies, numDependencies);
}

API CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                     size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams) {
    fake_sink = (uintptr_t)hGraph + nodeParams->gridDimX;
    return fake_node(phGraphNode, dependencies, numDependencies);
}

API CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                  size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx) {
    fake_sink = (uintptr_t)hGraph + copyParams->WidthInBytes + (uintptr_t)ctx;
    return fake_node(phGraphNode, dependencies, numDependencies);
}

API CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                  size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams,
                                  CUcontext ctx) {
    fake_sink = (uintptr_t)hGraph + memsetParams->width + (uintptr_t)ctx;
    return fake_node(phGraphNode, dependencies, numDependencies);
}

API CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                       size_t numDependencies, CUevent event) {
    fake_sink = (uintptr_t)hGraph + (uintptr_t)event;
    return fake_node(phGraphNode, dependencies, numDependencies);
}

API CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                     size_t numDependencies, CUevent event) {
    fake_sink = (uintptr_t)hGraph + (uintptr_t)event;
    return fake_node(phGraphNode, dependencies, numDependencies);
}

API CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                      size_t numDependencies, CUgraph childGraph) {
    fake_sink = (uintptr_t)hGraph + (uintptr_t)childGraph;
    return fake_node(phGraphNode, dependencies, numDependencies);
}

API CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                 size_t numDependencies) {
    fake_sink = (uintptr_t)hGraph;
    return fake_node(phGraphNode, dependencies, numDependencies);
}

API CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                            size_t numDependencies, CUgraphNodeParams *nodeParams) {
    fake_sink = (uintptr_t)hGraph + nodeParams->type;
    return fake_node(phGraphNode, dependencies, numDependencies);
}

API CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                               const CUgraphEdgeData *dependencyData, size_t numDependencies,
                               CUgraphNodeParams *nodeParams) {
    fake_sink = (uintptr_t)hGraph + nodeParams->type + (uintptr_t)dependencyData;
    return fake_node(phGraphNode, dependencies, numDependencies);
}

static CUresult add_dependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                 size_t numDependencies) {
    fake_calls++;
    for (size_t i = 0; i < numDependencies; i++)
        fake_sink += (uintptr_t)from[i] + (uintptr_t)to[i];
    fake_sink += (uintptr_t)hGraph;
    return CUDA_SUCCESS;
}

API CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                    size_t numDependencies) {
    return add_dependencies(hGraph, from, to, numDependencies);
}

API CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                       const CUgraphEdgeData *edgeData, size_t numDependencies) {
    fake_sink = (uintptr_t)edgeData;
    return add_dependencies(hGraph, from, to, numDependencies);
}

API CUresult cuGraphDestroyNode(CUgraphNode hNode) {
    fake_calls++;
    fake_sink = (uintptr_t)hNode;
    return CUDA_SUCCESS;
}

API CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams) {
    fake_calls++;
    fake_sink = (uintptr_t)hNode + nodeParams->gridDimX;
    return CUDA_SUCCESS;
}

API CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams) {
    fake_calls++;
    fake_sink = (uintptr_t)hNode + nodeParams->gridDimX;
    return CUDA_SUCCESS;
}

API CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams *nodeParams) {
    fake_calls++;
    fake_sink = (uintptr_t)hNode + nodeParams->type;
    return CUDA_SUCCESS;
}

API CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                            const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams) {
    fake_calls++;
    fake_sink = (uintptr_t)hGraphExec + (uintptr_t)hNode + nodeParams->gridDimX;
    return CUDA_SUCCESS;
}

API CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                               const CUDA_KERNEL_NODE_PARAMS *nodeParams) {
    fake_calls++;
    fake_sink = (uintptr_t)hGraphExec + (uintptr_t)hNode + nodeParams->gridDimX;
    return CUDA_SUCCESS;
}

API CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams *nodeParams) {
    fake_calls++;
    fake_sink = (uintptr_t)hGraphExec + (uintptr_t)hNode + nodeParams->type;
    return CUDA_SUCCESS;
}

API CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo) {
    fake_calls++;
    fake_sink = (uintptr_t)hGraphExec + (uintptr_t)hGraph + (uintptr_t)resultInfo;
    return CUDA_SUCCESS;
}

API CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                                   char *logBuffer, size_t bufferSize) {
    fake_calls++;
    fake_sink = (uintptr_t)hGraph + (uintptr_t)phErrorNode + (uintptr_t)logBuffer + bufferSize;
    *phGraphExec = H(0x80003 + 0x10 * fake_instantiates_v2++);
    return CUDA_SUCCESS;
}
