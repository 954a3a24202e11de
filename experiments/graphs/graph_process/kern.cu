// One elementwise kernel, the unit of the graph-chain microbenchmark
// (graph_chain_rt.cu, graph_chain_drv.cpp).
extern "C" __global__ void axpb(float *x, int n, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i] + b;
}
