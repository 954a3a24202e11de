/*
 * What replay needs of a driver beyond tracer's fake libcuda
 * (tracer/tests/fakecuda/fakecuda.c), linked with it into the libcuda.so of
 * replay/tests/together_fake_driver.rs. fakecuda.c is compiled with
 * -DcuMemAllocHost_v2=fake_cuMemAllocHost_v2 (and cuMemFreeHost, cuModuleLoadData,
 * cuDeviceTotalMem_v2 alike)
 * so that these definitions replace its own:
 *
 * - page-locked host memory that is real memory (replay writes into it);
 * - cuModuleLoadData failing with CUDA_ERROR_NO_BINARY_FOR_GPU (209) for
 *   the process whose recording path contains FAKECUDA_NO_BINARY_FOR (a
 *   tenant recorded for another architecture);
 * - the device's memory from FAKECUDA_TOTAL_MEM (bytes), when set;
 * - the three calls fakecuda.c lacks: cuDeviceGetPCIBusId, cuGetErrorName,
 *   cuMemGetAllocationGranularity.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakecuda.h"

#define API __attribute__((visibility("default")))

API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) {
    *pp = calloc(1, bytesize ? bytesize : 1);
    return *pp ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

API CUresult cuMemFreeHost(void *p) {
    free(p);
    return CUDA_SUCCESS;
}

static int no_binary(void) {
    const char *what = getenv("FAKECUDA_NO_BINARY_FOR");
    if (!what || !*what)
        return 0;
    FILE *f = fopen("/proc/self/cmdline", "r");
    if (!f)
        return 0;
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++)
        if (!buf[i])
            buf[i] = ' ';
    buf[n] = 0;
    return strstr(buf, " tenant ") && strstr(buf, what);
}

CUresult fake_cuModuleLoadData(CUmodule *module, const void *image);

API CUresult cuModuleLoadData(CUmodule *module, const void *image) {
    if (no_binary())
        return 209;
    return fake_cuModuleLoadData(module, image);
}

API CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) {
    snprintf(pciBusId, len, "00000000:00:06.%d", dev);
    return CUDA_SUCCESS;
}

API CUresult cuGetErrorName(CUresult error, const char **pStr) {
    *pStr = error == 209 ? "CUDA_ERROR_NO_BINARY_FOR_GPU" : "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}

API CUresult cuMemGetAllocationGranularity(size_t *granularity, const void *prop, int option) {
    (void)prop;
    (void)option;
    *granularity = 2 << 20;
    return CUDA_SUCCESS;
}

CUresult fake_cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev);

API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    const char *e = getenv("FAKECUDA_TOTAL_MEM");
    if (e && *e) {
        *bytes = strtoull(e, NULL, 10);
        return CUDA_SUCCESS;
    }
    return fake_cuDeviceTotalMem_v2(bytes, dev);
}
