/*
 * A second fake libcuda.so.1, for ../root_ioctls.rs: a few driver API entry
 * points whose bodies talk to /dev/nvidiactl the way the real libcuda does
 * (through fakenv_fuse, bind-mounted there), so that the test can check that
 * tracer attributes the ioctls made inside a CUDA call to that call.
 *
 * Build (as ../fakecuda/fakecuda.c, so every function starts with push %rbp):
 *   cc -O0 -fno-omit-frame-pointer -fcf-protection=none -fPIC -shared \
 *      -Wl,-soname,libcuda.so.1 -o libcuda.so.1 libcuda_ioctl.c
 *
 * cuInit(Flags)
 *   open("/dev/nvidiactl", O_RDWR | O_CLOEXEC)           (kept open)
 *   CHECK_VERSION_STR  strict, "580.142"                  -> reply 1
 *   RM_ALLOC (NVOS64)  {0, 0, 0, NV01_ROOT_CLIENT}        -> hObjectNew 0xc1d00001
 *   RM_CONTROL         {client, client, 0x13e, params, 16} -> NV_OK
 *   returns CUDA_SUCCESS (CUDA_ERROR_UNKNOWN 999 if a step failed)
 * cuMemAlloc_v2(dptr, bytesize)
 *   RM_ALLOC (NVOS64)  {client, client, 0, NV01_MEMORY_LOCAL_USER, params, 16}
 *                                                         -> hObjectNew 0xcaf00001, 2, ...
 *   RM_CONTROL         {client, hMemory, 0x20803002}      -> NV_ERR_NOT_SUPPORTED
 *   *dptr = 0x7f0000000000 + n * 0x100000; CUDA_SUCCESS (CUDA_ERROR_NOT_INITIALIZED
 *   3 before cuInit)
 * cuDriverGetVersion(v): *v = 13000, no ioctl.
 * Every status field is set to 0xffffffff before the call, so a status
 * read from the entry bytes instead of the exit bytes shows.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "nvtypes.h"

#define API __attribute__((noinline, used, visibility("default")))

typedef int CUresult;
typedef uint64_t CUdeviceptr;

static int ctl_fd = -1;
static NvHandle client;
static unsigned long allocs;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

API CUresult cuInit(unsigned int Flags) {
    (void)Flags;
    int fd = open("/dev/nvidiactl", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return 999;
    nv_ioctl_rm_api_version_t v;
    memset(&v, 0, sizeof(v));
    strcpy(v.versionString, "580.142");
    if (ioctl(fd, NV_IOWR(NV_ESC_CHECK_VERSION_STR, nv_ioctl_rm_api_version_t), &v) != 0 || v.reply != 1)
        return 999;
    NVOS64_PARAMETERS a;
    memset(&a, 0, sizeof(a));
    a.hClass = NV01_ROOT_CLIENT;
    a.status = 0xffffffffu;
    if (ioctl(fd, NV_IOWR(NV_ESC_RM_ALLOC, NVOS64_PARAMETERS), &a) != 0 || a.status != NV_OK)
        return 999;
    unsigned char params[16] = {0};
    NVOS54_PARAMETERS c;
    memset(&c, 0, sizeof(c));
    c.hClient = a.hObjectNew;
    c.hObject = a.hObjectNew;
    c.cmd = 0x13e; /* NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2 */
    c.params = (uint64_t)(uintptr_t)params;
    c.paramsSize = sizeof(params);
    c.status = 0xffffffffu;
    if (ioctl(fd, NV_IOWR(NV_ESC_RM_CONTROL, NVOS54_PARAMETERS), &c) != 0 || c.status != NV_OK)
        return 999;
    pthread_mutex_lock(&lock);
    ctl_fd = fd;
    client = a.hObjectNew;
    pthread_mutex_unlock(&lock);
    return 0;
}

API CUresult cuDriverGetVersion(int *driverVersion) {
    *driverVersion = 13000;
    return 0;
}

API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    pthread_mutex_lock(&lock);
    int fd = ctl_fd;
    NvHandle h = client;
    pthread_mutex_unlock(&lock);
    if (fd < 0)
        return 3; /* CUDA_ERROR_NOT_INITIALIZED */
    unsigned char params[16] = {0};
    memcpy(params, &bytesize, sizeof(bytesize));
    NVOS64_PARAMETERS a;
    memset(&a, 0, sizeof(a));
    a.hRoot = h;
    a.hObjectParent = h;
    a.hClass = NV01_MEMORY_LOCAL_USER;
    a.pAllocParms = (uint64_t)(uintptr_t)params;
    a.paramsSize = sizeof(params);
    a.status = 0xffffffffu;
    if (ioctl(fd, NV_IOWR(NV_ESC_RM_ALLOC, NVOS64_PARAMETERS), &a) != 0 || a.status != NV_OK)
        return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    NVOS54_PARAMETERS c;
    memset(&c, 0, sizeof(c));
    c.hClient = h;
    c.hObject = a.hObjectNew;
    c.cmd = 0x20803002; /* NV2080_CTRL_CMD_NVLINK_GET_NVLINK_STATUS: NOT_SUPPORTED here */
    c.status = 0xffffffffu;
    if (ioctl(fd, NV_IOWR(NV_ESC_RM_CONTROL, NVOS54_PARAMETERS), &c) != 0 || c.status != NV_ERR_NOT_SUPPORTED)
        return 999;
    pthread_mutex_lock(&lock);
    *dptr = 0x7f0000000000ull + allocs++ * 0x100000ull;
    pthread_mutex_unlock(&lock);
    return 0;
}
