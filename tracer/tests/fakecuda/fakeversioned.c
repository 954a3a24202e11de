/* The fake libcuda's versioned entry points (the ones cuGetProcAddress hands
 * out by CUDA version: 12.x, 13.0) and the work/wait functions of the table's
 * last section (included by fakecuda.c, after fakegraph.c). Signatures from
 * cuda.h 13.0 (the `_v1` ones from its __CUDA_API_VERSION_INTERNAL section).
 *
 * Values returned:
 *   cuGetProcAddress          as cuGetProcAddress_v2 (fakecuda.c's fake_proc_address():
 *                             the entry point for symbol, version and flags);
 *                             unknown symbol: CUDA_ERROR_NOT_FOUND, pfn NULL
 *   cuCtxGetDevice_v2         (ctx >> 12) & 0xf (the context's device digit:
 *                             0xc4001 gives 4)
 *   cuDeviceGetUuid           bytes 0x10 * dev + i
 *   cuGraphExecUpdate         *hErrorNode_out 0, *updateResult_out 0 (success)
 *   cuStreamGetCaptureInfo(_ptsz) status 1 (active), id 0x100 + (hStream & 0xff)
 *   cuGraphGetEdges(_v2)      3 edges: with from and to null, *numEdges = 3;
 *                             else min(*numEdges, 3) edges 0xa0000 + 0x10 * i
 *                             -> 0xa0010 + 0x10 * i and *numEdges = that count
 *                             (edgeData is left alone)
 *   cuMemcpyBatchAsync, cuMemcpy3DBatchAsync *failIdx SIZE_MAX (no failure)
 *   cuIpcGetMemHandle         reserved[0..8] = dptr (little-endian), the rest 0
 *   cuIpcOpenMemHandle        0x7f6000000000 + 0x100000 * (unsigned char)handle.reserved[63]
 *   cuIpcOpenMemHandle_v2     0x7f7000000000 + 0x100000 * (unsigned char)handle.reserved[63]
 * Everything else returns CUDA_SUCCESS and writes nothing (no callback is
 * ever called, no host pointer read).
 */

/* The CUDA 11.3-12.4 ABI (no symbolStatus). */
API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
    fake_calls++;
    fake_sink = strlen(symbol) + cudaVersion + flags;
    *pfn = fake_proc_address(symbol, cudaVersion, flags);
    return *pfn ? CUDA_SUCCESS : 500; /* CUDA_ERROR_NOT_FOUND */
}

API CUresult cuCtxSynchronize_v2(CUcontext ctx) {
    fake_calls++;
    fake_sink = (uintptr_t)ctx;
    return CUDA_SUCCESS;
}

API CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
    fake_calls++;
    *device = (int)(((uintptr_t)ctx >> 12) & 0xf);
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
    fake_calls++;
    for (int i = 0; i < 16; i++)
        uuid->bytes[i] = (char)(0x10 * dev + i);
    return CUDA_SUCCESS;
}

/* ---- graphs and stream capture */

API CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
                               CUgraphExecUpdateResult *updateResult_out) {
    fake_calls++;
    fake_sink = (uintptr_t)hGraphExec + (uintptr_t)hGraph;
    *hErrorNode_out = 0;
    *updateResult_out = 0;
    return CUDA_SUCCESS;
}

/* Shared body: an exported function calling another would be probed twice. */
static CUresult capture_info_v1(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out) {
    fake_calls++;
    *captureStatus_out = 1;
    if (id_out)
        *id_out = 0x100 + ((uintptr_t)hStream & 0xff);
    return CUDA_SUCCESS;
}

API CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out) {
    return capture_info_v1(hStream, captureStatus_out, id_out);
}

API CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                         cuuint64_t *id_out) {
    return capture_info_v1(hStream, captureStatus_out, id_out);
}

API CUresult cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode *dependencies, size_t numDependencies,
                                               unsigned int flags) {
    fake_calls++;
    fake_sink = (uintptr_t)hStream + numDependencies + flags;
    for (size_t i = 0; i < numDependencies; i++)
        fake_sink += (uintptr_t)dependencies[i];
    return CUDA_SUCCESS;
}

API CUresult cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode *dependencies,
                                                  const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                                  unsigned int flags) {
    fake_calls++;
    fake_sink = (uintptr_t)hStream + (uintptr_t)dependencyData + numDependencies + flags;
    for (size_t i = 0; i < numDependencies; i++)
        fake_sink += (uintptr_t)dependencies[i];
    return CUDA_SUCCESS;
}

static CUresult graph_edges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, size_t *numEdges) {
    fake_calls++;
    fake_sink = (uintptr_t)hGraph;
    if (!from || !to) {
        *numEdges = 3;
        return CUDA_SUCCESS;
    }
    size_t n = *numEdges < 3 ? *numEdges : 3;
    for (size_t i = 0; i < n; i++) {
        from[i] = H(0xa0000 + 0x10 * i);
        to[i] = H(0xa0010 + 0x10 * i);
    }
    *numEdges = n;
    return CUDA_SUCCESS;
}

API CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, size_t *numEdges) {
    return graph_edges(hGraph, from, to, numEdges);
}

API CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *edgeData,
                                size_t *numEdges) {
    fake_sink = (uintptr_t)edgeData;
    return graph_edges(hGraph, from, to, numEdges);
}

/* ---- unified memory: prefetch, advice, discard */

API CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                                   CUstream hStream) {
    fake_calls++;
    fake_sink = devPtr + count + location.type + location.id + flags + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

API CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                        unsigned int flags, CUstream hStream) {
    fake_calls++;
    fake_sink = devPtr + count + location.type + location.id + flags + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

API CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device) {
    fake_calls++;
    fake_sink = devPtr + count + advice + device;
    return CUDA_SUCCESS;
}

API CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location) {
    fake_calls++;
    fake_sink = devPtr + count + advice + location.type + location.id;
    return CUDA_SUCCESS;
}

API CUresult cuMemPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,
                                     size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
                                     CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)dptrs + (uintptr_t)sizes + count + (uintptr_t)prefetchLocs + (uintptr_t)prefetchLocIdxs +
                numPrefetchLocs + flags + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

API CUresult cuMemDiscardBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count, unsigned long long flags,
                                    CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)dptrs + (uintptr_t)sizes + count + flags + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

API CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                               CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
                                               size_t numPrefetchLocs, unsigned long long flags, CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)dptrs + (uintptr_t)sizes + count + (uintptr_t)prefetchLocs + (uintptr_t)prefetchLocIdxs +
                numPrefetchLocs + flags + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

/* ---- copies: batches, 3D peer, CUDA arrays */

API CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                                CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)dsts + (uintptr_t)srcs + (uintptr_t)sizes + count + (uintptr_t)attrs +
                (uintptr_t)attrsIdxs + numAttrs + (uintptr_t)hStream;
    if (failIdx)
        *failIdx = SIZE_MAX;
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                   CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)dsts + (uintptr_t)srcs + (uintptr_t)sizes + count + (uintptr_t)attrs +
                (uintptr_t)attrsIdxs + numAttrs + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                        CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                        CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)dsts + (uintptr_t)srcs + (uintptr_t)sizes + count + (uintptr_t)attrs +
                (uintptr_t)attrsIdxs + numAttrs + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

API CUresult cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx,
                                  unsigned long long flags, CUstream hStream) {
    fake_calls++;
    fake_sink = numOps + (uintptr_t)opList + flags + (uintptr_t)hStream;
    if (failIdx)
        *failIdx = SIZE_MAX;
    return CUDA_SUCCESS;
}

API CUresult cuMemcpy3DBatchAsync_v2(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags,
                                     CUstream hStream) {
    fake_calls++;
    fake_sink = numOps + (uintptr_t)opList + flags + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

API CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy) {
    fake_calls++;
    fake_sink = (uintptr_t)pCopy;
    return CUDA_SUCCESS;
}

API CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)pCopy + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount) {
    fake_calls++;
    fake_sink = (uintptr_t)dstArray + dstOffset + (uintptr_t)srcHost + ByteCount;
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyAtoH_v2(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
    fake_calls++;
    fake_sink = (uintptr_t)dstHost + (uintptr_t)srcArray + srcOffset + ByteCount;
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount) {
    fake_calls++;
    fake_sink = (uintptr_t)dstArray + dstOffset + srcDevice + ByteCount;
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
    fake_calls++;
    fake_sink = dstDevice + (uintptr_t)srcArray + srcOffset + ByteCount;
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
                             size_t ByteCount) {
    fake_calls++;
    fake_sink = (uintptr_t)dstArray + dstOffset + (uintptr_t)srcArray + srcOffset + ByteCount;
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyHtoAAsync_v2(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount,
                                  CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)dstArray + dstOffset + (uintptr_t)srcHost + ByteCount + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyAtoHAsync_v2(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
                                  CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)dstHost + (uintptr_t)srcArray + srcOffset + ByteCount + (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

/* ---- stream memory operations, callbacks */

#define STREAM_VALUE_OP(name, T)                                                                 \
    API CUresult name(CUstream stream, CUdeviceptr addr, T value, unsigned int flags) {          \
        fake_calls++;                                                                            \
        fake_sink = (uintptr_t)stream + addr + value + flags;                                    \
        return CUDA_SUCCESS;                                                                     \
    }
STREAM_VALUE_OP(cuStreamWaitValue32, cuuint32_t)
STREAM_VALUE_OP(cuStreamWaitValue32_v2, cuuint32_t)
STREAM_VALUE_OP(cuStreamWaitValue64, cuuint64_t)
STREAM_VALUE_OP(cuStreamWaitValue64_v2, cuuint64_t)
STREAM_VALUE_OP(cuStreamWriteValue32, cuuint32_t)
STREAM_VALUE_OP(cuStreamWriteValue32_v2, cuuint32_t)
STREAM_VALUE_OP(cuStreamWriteValue64, cuuint64_t)
STREAM_VALUE_OP(cuStreamWriteValue64_v2, cuuint64_t)
#undef STREAM_VALUE_OP

API CUresult cuStreamBatchMemOp(CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray,
                                unsigned int flags) {
    fake_calls++;
    fake_sink = (uintptr_t)stream + count + (uintptr_t)paramArray + flags;
    return CUDA_SUCCESS;
}

API CUresult cuStreamBatchMemOp_v2(CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray,
                                   unsigned int flags) {
    fake_calls++;
    fake_sink = (uintptr_t)stream + count + (uintptr_t)paramArray + flags;
    return CUDA_SUCCESS;
}

API CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags) {
    fake_calls++;
    fake_sink = (uintptr_t)hStream + (uintptr_t)callback + (uintptr_t)userData + flags;
    return CUDA_SUCCESS;
}

/* ---- context-wide events */

API CUresult cuCtxRecordEvent(CUcontext hCtx, CUevent hEvent) {
    fake_calls++;
    fake_sink = (uintptr_t)hCtx + (uintptr_t)hEvent;
    return CUDA_SUCCESS;
}

API CUresult cuCtxWaitEvent(CUcontext hCtx, CUevent hEvent) {
    fake_calls++;
    fake_sink = (uintptr_t)hCtx + (uintptr_t)hEvent;
    return CUDA_SUCCESS;
}

/* ---- inter-process memory */

API CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
    fake_calls++;
    fake_sink = Flags;
    *pdptr = 0x7f6000000000ULL + 0x100000ULL * (unsigned char)handle.reserved[63];
    return CUDA_SUCCESS;
}

API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
    fake_calls++;
    fake_sink = Flags;
    *pdptr = 0x7f7000000000ULL + 0x100000ULL * (unsigned char)handle.reserved[63];
    return CUDA_SUCCESS;
}

API CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr) {
    fake_calls++;
    memset(pHandle->reserved, 0, sizeof pHandle->reserved);
    for (int i = 0; i < 8; i++)
        pHandle->reserved[i] = (char)(dptr >> (8 * i));
    return CUDA_SUCCESS;
}

API CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
    fake_calls++;
    fake_sink = dptr;
    return CUDA_SUCCESS;
}

/* First versions still handed out for old CUDA versions (signatures as their _v2). */
API CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
    fake_calls++;
    fake_sink = dev;
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
    fake_calls++;
    fake_sink = dev + 1;
    return CUDA_SUCCESS;
}

API CUresult cuStreamBeginCapture(CUstream hStream) {
    fake_calls++;
    fake_sink = (uintptr_t)hStream;
    return CUDA_SUCCESS;
}

/* cuGraphInstantiate (v1)      0x80f00 + the graph's low 8 bits */
API CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
                                size_t bufferSize) {
    fake_calls++;
    fake_sink = (uintptr_t)phErrorNode + (uintptr_t)logBuffer + bufferSize;
    *phGraphExec = H(0x80f00 + ((uintptr_t)hGraph & 0xff));
    return CUDA_SUCCESS;
}
