/*
 * Reaches the driver only through cuGetProcAddress pointers, as the CUDA 12/13 runtime
 * does (tests/root_entry_points.rs):
 *   cuLaunchKernel      CUDA 13000, per-thread default stream -> cuLaunchKernel_ptsz, 1000 calls
 *   cuCtxSynchronize    13000                                  -> cuCtxSynchronize_v2, 100 calls
 *   cuStreamSynchronize 13000, per-thread default stream      -> cuStreamSynchronize_ptsz, 100 calls
 *   cuEventElapsedTime  12000                                  -> cuEventElapsedTime, 1 call
 *   cuFakeUnlistedAsync an entry point no list of tracer's names, 3 calls
 *   cuFakeHidden        a library function no exported symbol names, 2 calls
 *   cuNoSuchFunction    unknown to the driver: CUDA_ERROR_NOT_FOUND
 *   cuDevicePrimaryCtxGetState a state getter tracer leaves out by default, 4 calls
 * Nothing is called by name except cuGetProcAddress_v2.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fakecuda.h"

#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);
typedef CUresult (*ctx_sync_fn)(CUcontext);
typedef CUresult (*stream_sync_fn)(CUstream);
typedef CUresult (*elapsed_fn)(float *, CUevent, CUevent);
typedef CUresult (*unlisted_fn)(CUstream, unsigned int);
typedef CUresult (*hidden_fn)(CUstream);
typedef CUresult (*state_fn)(CUdevice, unsigned int *, int *);

static void *resolve(const char *symbol, int version, cuuint64_t flags) {
    void *p = NULL;
    CUdriverProcAddressQueryResult st = -1;
    CUresult r = cuGetProcAddress_v2(symbol, &p, version, flags, &st);
    if (r != 0 || !p) {
        fprintf(stderr, "procaddr: cuGetProcAddress(%s) failed: %d\n", symbol, r);
        exit(1);
    }
    return p;
}

int main(void) {
    launch_fn launch = (launch_fn)resolve("cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    ctx_sync_fn ctx_sync = (ctx_sync_fn)resolve("cuCtxSynchronize", 13000, 0);
    stream_sync_fn stream_sync =
        (stream_sync_fn)resolve("cuStreamSynchronize", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    elapsed_fn elapsed = (elapsed_fn)resolve("cuEventElapsedTime", 12000, 0);
    unlisted_fn unlisted = (unlisted_fn)resolve("cuFakeUnlistedAsync", 13000, 0);
    hidden_fn hidden = (hidden_fn)resolve("cuFakeHidden", 13000, 0);
    state_fn state = (state_fn)resolve("cuDevicePrimaryCtxGetState", 13000, 0);
    void *none = (void *)1;
    CUdriverProcAddressQueryResult st = 0;
    if (cuGetProcAddress_v2("cuNoSuchFunction", &none, 13000, 0, &st) != 500 || none || st != 1) {
        fprintf(stderr, "procaddr: an unknown symbol was found\n");
        return 1;
    }
    for (int i = 0; i < 1000; i++)
        if (launch((CUfunction)0x4001, 1 + i % 7, 1, 1, 128, 1, 1, 0, (CUstream)0x5100, NULL, NULL))
            return 2;
    for (int i = 0; i < 100; i++)
        if (ctx_sync((CUcontext)0xc1001) || stream_sync((CUstream)0x5100))
            return 3;
    float ms = 0;
    if (elapsed(&ms, (CUevent)0xee001, (CUevent)0xee002))
        return 4;
    for (int i = 0; i < 3; i++)
        if (unlisted((CUstream)0x5100, i))
            return 5;
    for (int i = 0; i < 2; i++)
        if (hidden((CUstream)0x5100))
            return 6;
    unsigned int flags;
    int active;
    for (int i = 0; i < 4; i++)
        if (state(0, &flags, &active))
            return 7;
    return 0;
}
