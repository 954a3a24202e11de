/*
 * fakenv client: talks to NVIDIA's device files (fakenv_fuse, bind-mounted at
 * /dev/nvidiactl, /dev/nvidia0, /dev/nvidia-uvm) with the real request numbers
 * and parameter structs, for ../root_ioctls.rs. Linked against the fake
 * libcuda of libcuda_ioctl.c (as libcuda.so.1, rpath).
 *
 *   client all          the scenario below, step by step
 *   client threads T N  cuInit, then T threads: even ones call cuMemAlloc_v2
 *                       N times, odd ones make N RM_CONTROLs of their own
 *   client inherit      dup()ed and fork()-inherited nvidiactl fds
 *   client stale        fd numbers that stop being NVIDIA files without a
 *                       close(): dup2() over one, and O_CLOEXEC at execve()
 *   client exits N      N short-lived children each open /dev/nvidiactl and
 *                       exit without closing it; then an RM_CONTROL
 *                       (cmd 0x20800142) on a fresh fd of the parent
 *
 * Checks every answer against what fakenv_fuse is documented to give (exit
 * status 1 and "fakenv: FAIL ..." on stderr otherwise), and prints the values
 * a test cannot know in advance as "fakenv: key=value" lines on stdout (fds,
 * buffer addresses, the mmap address, pids and tids).
 *
 * Steps of `all` (the test expects exactly these, in this order):
 *   cuInit(0), cuMemAlloc_v2(1 MiB)               (see libcuda_ioctl.c)
 *   A = open /dev/nvidiactl
 *   CHECK_VERSION_STR strict "580.142"            ret 0, reply 1
 *   CHECK_VERSION_STR strict "999.99"             ret -EINVAL, reply 0, versionString "580.142"
 *   CARD_INFO 32 slots (2304 bytes)               slot 0 valid
 *   RM_ALLOC NVOS21 {0,0,0,NV01_ROOT}             hObjectNew 0xc1d00001, class 0x41
 *   RM_ALLOC NVOS64 device   {C, C, 0xcafe0001, 0x80}          NV_OK
 *   RM_ALLOC NVOS64 subdev   {C, 0xcafe0001, 0xcafe0002, 0x2080} NV_OK
 *   RM_ALLOC NVOS64 bad      {C, 0xcafe0001, 0xcafe0003, 0xdead} NV_ERR_INVALID_CLASS
 *   RM_CONTROL {C, 0xcafe0002, 0x20800102, params, 24}          NV_OK
 *   RM_CONTROL {C, 0xcafe0002, 0x20803002, params, 24}          NV_ERR_NOT_SUPPORTED
 *   RM_VID_HEAP_CONTROL ALLOC_SIZE {C, 0xcafe0001}, 2 MiB  hMemory 0xcaf00001, NV_OK
 *   B = open /dev/nvidia0
 *   REGISTER_FD on B {ctl_fd A}                   ret 0
 *   RM_MAP_MEMORY {C, 0xcafe0001, 0xcaf00001, 0, 0x2000, fd B}  pLinearAddress 0x10000
 *   mmap(B, 0x2000, RW, SHARED, 0x10000); munmap
 *   RM_CONTROL on B                               ret -EINVAL (ctl-only escape)
 *   nr 0x77 (16 bytes) on A                       ret -EINVAL
 *   XFER_CMD {0x2a, 32, &NVOS54 0x20800102}       NV_OK (inner struct)
 *   XFER_CMD {0x2a, 32, &NVOS54 0x20803002}       NV_ERR_NOT_SUPPORTED (inner struct)
 *   ALLOC_OS_EVENT {C, 0xcafe0001, A}             NV_OK
 *   ATTACH_GPUS_TO_FD {0x4100}                    ret 0
 *   RM_FREE {C, C, 0xcafe0001}                    NV_OK
 *   FIONREAD on a pipe                            (not an NVIDIA fd)
 *   U = open /dev/nvidia-uvm
 *   UVM_PAGEABLE_MEM_ACCESS                       NV_ERR_ILLEGAL_ACTION (before INITIALIZE)
 *   UVM_INITIALIZE {flags 0}                      NV_OK
 *   UVM_PAGEABLE_MEM_ACCESS                       NV_OK, pageableMemAccess 1
 *   UVM request 0x5555                            ret -EINVAL
 *   open /dev/nvidia7                             -ENOENT
 *   close U, B, A
 * Status fields are set to 0xffffffff before each call (except where the
 * driver writes none: the two -EINVAL frontend calls), so a status read at
 * entry instead of exit shows.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nvtypes.h"

typedef int CUresult;
typedef uint64_t CUdeviceptr;
CUresult cuInit(unsigned int Flags);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);

#define GARBAGE 0xffffffffu

static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fakenv: FAIL ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            fail(__VA_ARGS__);                                                                                         \
    } while (0)

/* One line in one stdio call: threads report at the same time, and three
 * printf calls of two threads could interleave ("fakenv: thread=fakenv: ..."). */
static void report(const char *key, const char *fmt, ...) {
    char value[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    printf("fakenv: %s=%s\n", key, value);
    fflush(stdout);
}

static void report_ptr(const char *key, const void *p) { report(key, "0x%llx", (unsigned long long)(uintptr_t)p); }

static int open_dev(const char *path) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    return fd;
}

/* ioctl returning 0 or -errno */
static long xioctl(int fd, unsigned long req, void *arg) {
    long r = ioctl(fd, req, arg);
    return r < 0 ? -errno : r;
}

#define C_HANDLE 0xc1d00001u
#define DEVICE 0xcafe0001u
#define SUBDEVICE 0xcafe0002u

static long rm_control(int fd, NvHandle cl, NvHandle obj, uint32_t cmd, void *params, uint32_t size, uint32_t *status) {
    NVOS54_PARAMETERS c;
    memset(&c, 0, sizeof(c));
    c.hClient = cl;
    c.hObject = obj;
    c.cmd = cmd;
    c.params = (uint64_t)(uintptr_t)params;
    c.paramsSize = size;
    c.status = status ? GARBAGE : 0;
    long r = xioctl(fd, NV_IOWR(NV_ESC_RM_CONTROL, NVOS54_PARAMETERS), &c);
    if (status)
        *status = c.status;
    return r;
}

static long rm_alloc64(int fd, NvHandle root, NvHandle parent, NvHandle *newh, uint32_t cls, void *params,
                       uint32_t size, uint32_t *status) {
    NVOS64_PARAMETERS a;
    memset(&a, 0, sizeof(a));
    a.hRoot = root;
    a.hObjectParent = parent;
    a.hObjectNew = *newh;
    a.hClass = cls;
    a.pAllocParms = (uint64_t)(uintptr_t)params;
    a.paramsSize = size;
    a.status = GARBAGE;
    long r = xioctl(fd, NV_IOWR(NV_ESC_RM_ALLOC, NVOS64_PARAMETERS), &a);
    *newh = a.hObjectNew;
    *status = a.status;
    return r;
}

static void scenario_all(void) {
    long r;
    uint32_t st;

    /* ---- through the fake libcuda */
    CHECK(cuInit(0) == 0, "cuInit");
    CUdeviceptr dptr = 0;
    CHECK(cuMemAlloc_v2(&dptr, 1 << 20) == 0 && dptr == 0x7f0000000000ull, "cuMemAlloc_v2");

    /* ---- directly */
    int A = open_dev("/dev/nvidiactl");
    report("ctl_fd", "%d", A);

    nv_ioctl_rm_api_version_t v;
    memset(&v, 0, sizeof(v));
    strcpy(v.versionString, "580.142");
    r = xioctl(A, NV_IOWR(NV_ESC_CHECK_VERSION_STR, nv_ioctl_rm_api_version_t), &v);
    CHECK(r == 0 && v.reply == 1, "CHECK_VERSION_STR ok: r=%ld reply=%u", r, v.reply);

    memset(&v, 0, sizeof(v));
    strcpy(v.versionString, "999.99");
    v.reply = 7;
    r = xioctl(A, NV_IOWR(NV_ESC_CHECK_VERSION_STR, nv_ioctl_rm_api_version_t), &v);
    CHECK(r == -EINVAL && v.reply == 0 && strcmp(v.versionString, "580.142") == 0,
          "CHECK_VERSION_STR mismatch: r=%ld reply=%u version=%s", r, v.reply, v.versionString);

    static nv_ioctl_card_info_t cards[32];
    memset(cards, 0xee, sizeof(cards));
    r = xioctl(A, NV_IOWR(NV_ESC_CARD_INFO, nv_ioctl_card_info_t[32]), cards);
    CHECK(r == 0 && cards[0].bytes[0] == 1 && cards[1].bytes[0] == 0, "CARD_INFO: r=%ld", r);

    NVOS21_PARAMETERS a21;
    memset(&a21, 0, sizeof(a21));
    a21.hClass = NV01_ROOT;
    a21.status = GARBAGE;
    r = xioctl(A, NV_IOWR(NV_ESC_RM_ALLOC, NVOS21_PARAMETERS), &a21);
    CHECK(r == 0 && a21.status == NV_OK && a21.hObjectNew == C_HANDLE && a21.hClass == NV01_ROOT_CLIENT,
          "RM_ALLOC root: r=%ld status=%#x h=%#x class=%#x", r, a21.status, a21.hObjectNew, a21.hClass);
    NvHandle C = a21.hObjectNew;

    static unsigned char dev_params[56], sub_params[8];
    report_ptr("dev_params", dev_params);
    report_ptr("sub_params", sub_params);
    NvHandle h = DEVICE;
    r = rm_alloc64(A, C, C, &h, NV01_DEVICE_0, dev_params, sizeof(dev_params), &st);
    CHECK(r == 0 && st == NV_OK && h == DEVICE, "RM_ALLOC device: r=%ld status=%#x", r, st);
    h = SUBDEVICE;
    r = rm_alloc64(A, C, DEVICE, &h, NV20_SUBDEVICE_0, sub_params, sizeof(sub_params), &st);
    CHECK(r == 0 && st == NV_OK && h == SUBDEVICE, "RM_ALLOC subdevice: r=%ld status=%#x", r, st);
    h = 0xcafe0003;
    r = rm_alloc64(A, C, DEVICE, &h, 0xdead, NULL, 0, &st);
    CHECK(r == 0 && st == NV_ERR_INVALID_CLASS, "RM_ALLOC 0xdead: r=%ld status=%#x", r, st);

    static unsigned char ctrl_params[24];
    report_ptr("ctrl_params", ctrl_params);
    r = rm_control(A, C, SUBDEVICE, 0x20800102, ctrl_params, sizeof(ctrl_params), &st);
    CHECK(r == 0 && st == NV_OK, "RM_CONTROL GPU_GET_INFO_V2: r=%ld status=%#x", r, st);
    r = rm_control(A, C, SUBDEVICE, 0x20803002, ctrl_params, sizeof(ctrl_params), &st);
    CHECK(r == 0 && st == NV_ERR_NOT_SUPPORTED, "RM_CONTROL NVLINK_STATUS: r=%ld status=%#x", r, st);

    NVOS32_PARAMETERS vh;
    memset(&vh, 0, sizeof(vh));
    vh.hRoot = C;
    vh.hObjectParent = DEVICE;
    vh.function = 2; /* NVOS32_FUNCTION_ALLOC_SIZE */
    vh.status = GARBAGE;
    vh.data.AllocSize.owner = 0x1234;
    vh.data.AllocSize.type = 0;
    vh.data.AllocSize.flags = 0x5;
    vh.data.AllocSize.size = 2 << 20;
    vh.data.AllocSize.alignment = 4096;
    vh.data.AllocSize.numaNode = -1;
    r = xioctl(A, NV_IOWR(NV_ESC_RM_VID_HEAP_CONTROL, NVOS32_PARAMETERS), &vh);
    CHECK(r == 0 && vh.status == NV_OK && vh.data.AllocSize.hMemory == 0xcaf00001u && vh.total == 80ull << 30 &&
              vh.free == 70ull << 30 && vh.data.AllocSize.offset == 0x200000 &&
              vh.data.AllocSize.limit == 0x200000 + (2 << 20) - 1,
          "RM_VID_HEAP_CONTROL: r=%ld status=%#x hMemory=%#x", r, vh.status, vh.data.AllocSize.hMemory);
    NvHandle mem = vh.data.AllocSize.hMemory;

    int B = open_dev("/dev/nvidia0");
    report("gpu_fd", "%d", B);
    nv_ioctl_register_fd_t reg = {A};
    r = xioctl(B, NV_IOWR(NV_ESC_REGISTER_FD, nv_ioctl_register_fd_t), &reg);
    CHECK(r == 0, "REGISTER_FD: r=%ld", r);

    NVOS33_WITH_FD mm;
    memset(&mm, 0, sizeof(mm));
    mm.hClient = C;
    mm.hDevice = DEVICE;
    mm.hMemory = mem;
    mm.offset = 0;
    mm.length = 0x2000;
    mm.flags = 0;
    mm.fd = B;
    mm.status = GARBAGE;
    r = xioctl(A, NV_IOWR(NV_ESC_RM_MAP_MEMORY, NVOS33_WITH_FD), &mm);
    CHECK(r == 0 && mm.status == NV_OK && mm.pLinearAddress == 0x10000, "RM_MAP_MEMORY: r=%ld status=%#x", r,
          mm.status);

    void *map = mmap(NULL, 0x2000, PROT_READ | PROT_WRITE, MAP_SHARED, B, (off_t)mm.pLinearAddress);
    CHECK(map != MAP_FAILED, "mmap: %s", strerror(errno));
    report_ptr("mmap_addr", map);
    CHECK(((volatile unsigned char *)map)[0] == 0, "mapped byte");
    CHECK(munmap(map, 0x2000) == 0, "munmap: %s", strerror(errno));

    r = rm_control(B, C, SUBDEVICE, 0x20800102, ctrl_params, sizeof(ctrl_params), NULL);
    CHECK(r == -EINVAL, "RM_CONTROL on the GPU fd: r=%ld", r);

    unsigned char unknown[16];
    memset(unknown, 0x5a, sizeof(unknown));
    r = xioctl(A, NV_IOWR(0x77, unsigned char[16]), unknown);
    CHECK(r == -EINVAL && unknown[0] == 0x5a, "nr 0x77: r=%ld", r);

    static NVOS54_PARAMETERS inner[2];
    report_ptr("xfer_inner0", &inner[0]);
    report_ptr("xfer_inner1", &inner[1]);
    uint32_t xcmds[2] = {0x20800102, 0x20803002};
    uint32_t xwant[2] = {NV_OK, NV_ERR_NOT_SUPPORTED};
    for (int i = 0; i < 2; i++) {
        inner[i].hClient = C;
        inner[i].hObject = SUBDEVICE;
        inner[i].cmd = xcmds[i];
        inner[i].params = (uint64_t)(uintptr_t)ctrl_params;
        inner[i].paramsSize = sizeof(ctrl_params);
        inner[i].status = GARBAGE;
        nv_ioctl_xfer_t x = {NV_ESC_RM_CONTROL, sizeof(NVOS54_PARAMETERS), (uint64_t)(uintptr_t)&inner[i]};
        r = xioctl(A, NV_IOWR(NV_ESC_IOCTL_XFER_CMD, nv_ioctl_xfer_t), &x);
        CHECK(r == 0 && inner[i].status == xwant[i], "XFER %d: r=%ld status=%#x", i, r, inner[i].status);
    }

    nv_ioctl_alloc_os_event_t ev = {C, DEVICE, (uint32_t)A, GARBAGE};
    r = xioctl(A, NV_IOWR(NV_ESC_ALLOC_OS_EVENT, nv_ioctl_alloc_os_event_t), &ev);
    CHECK(r == 0 && ev.Status == NV_OK, "ALLOC_OS_EVENT: r=%ld status=%#x", r, ev.Status);

    uint32_t gpu_ids[1] = {0x4100};
    r = xioctl(A, NV_IOWR(NV_ESC_ATTACH_GPUS_TO_FD, uint32_t[1]), gpu_ids);
    CHECK(r == 0, "ATTACH_GPUS_TO_FD: r=%ld", r);

    NVOS00_PARAMETERS fr = {C, C, DEVICE, GARBAGE};
    r = xioctl(A, NV_IOWR(NV_ESC_RM_FREE, NVOS00_PARAMETERS), &fr);
    CHECK(r == 0 && fr.status == NV_OK, "RM_FREE: r=%ld status=%#x", r, fr.status);

    int p[2];
    CHECK(pipe(p) == 0, "pipe");
    int avail = -1;
    CHECK(ioctl(p[0], FIONREAD, &avail) == 0 && avail == 0, "FIONREAD");
    report("pipe_fd", "%d", p[0]);
    close(p[0]);
    close(p[1]);

    int U = open_dev("/dev/nvidia-uvm");
    report("uvm_fd", "%d", U);
    UVM_PAGEABLE_MEM_ACCESS_PARAMS pma;
    memset(&pma, 0, sizeof(pma));
    pma.rmStatus = GARBAGE;
    r = xioctl(U, UVM_PAGEABLE_MEM_ACCESS, &pma);
    CHECK(r == 0 && pma.rmStatus == NV_ERR_ILLEGAL_ACTION, "UVM_PAGEABLE_MEM_ACCESS early: r=%ld status=%#x", r,
          pma.rmStatus);
    UVM_INITIALIZE_PARAMS init;
    memset(&init, 0, sizeof(init));
    init.rmStatus = GARBAGE;
    r = xioctl(U, UVM_INITIALIZE, &init);
    CHECK(r == 0 && init.rmStatus == NV_OK, "UVM_INITIALIZE: r=%ld status=%#x", r, init.rmStatus);
    memset(&pma, 0, sizeof(pma));
    pma.rmStatus = GARBAGE;
    r = xioctl(U, UVM_PAGEABLE_MEM_ACCESS, &pma);
    CHECK(r == 0 && pma.rmStatus == NV_OK && pma.pageableMemAccess == 1, "UVM_PAGEABLE_MEM_ACCESS: r=%ld status=%#x",
          r, pma.rmStatus);
    unsigned char ubuf[64] = {0};
    r = xioctl(U, 0x5555, ubuf);
    CHECK(r == -EINVAL, "UVM 0x5555: r=%ld", r);

    int bad = open("/dev/nvidia7", O_RDWR | O_CLOEXEC);
    CHECK(bad < 0 && errno == ENOENT, "open /dev/nvidia7: %d", bad);

    CHECK(close(U) == 0 && close(B) == 0 && close(A) == 0, "close");
    report("done", "1");
}

/* ---- threads ---------------------------------------------------------------- */

static int threads_ctl = -1;
static int threads_n;

static void *thread_main(void *arg) {
    long i = (long)(intptr_t)arg;
    report("thread", "%ld:%d", i, gettid());
    for (int j = 0; j < threads_n; j++) {
        if (i % 2 == 0) {
            CUdeviceptr d;
            CHECK(cuMemAlloc_v2(&d, 4096) == 0, "thread %ld cuMemAlloc_v2", i);
        } else {
            uint32_t st;
            long r = rm_control(threads_ctl, C_HANDLE, SUBDEVICE, 0x20800101, NULL, 0, &st);
            CHECK(r == 0 && st == NV_OK, "thread %ld RM_CONTROL: r=%ld status=%#x", i, r, st);
        }
    }
    return NULL;
}

static void scenario_threads(int t, int n) {
    CHECK(cuInit(0) == 0, "cuInit");
    threads_ctl = open_dev("/dev/nvidiactl");
    report("ctl_fd", "%d", threads_ctl);
    threads_n = n;
    pthread_t th[64];
    CHECK(t > 0 && t <= 64, "thread count");
    for (long i = 0; i < t; i++)
        CHECK(pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)i) == 0, "pthread_create");
    for (int i = 0; i < t; i++)
        pthread_join(th[i], NULL);
    close(threads_ctl);
    report("done", "1");
}

/* ---- inherited fds ------------------------------------------------------------ */

static void scenario_inherit(void) {
    uint32_t st;
    long r;
    int A = open_dev("/dev/nvidiactl");
    report("ctl_fd", "%d", A);
    /* marker: on A itself (cmd 0x20800101) */
    r = rm_control(A, C_HANDLE, SUBDEVICE, 0x20800101, NULL, 0, &st);
    CHECK(r == 0 && st == NV_OK, "RM_CONTROL on A");
    int D = dup(A);
    CHECK(D >= 0, "dup");
    report("dup_fd", "%d", D);
    /* on the dup (cmd 0x20800119) */
    r = rm_control(D, C_HANDLE, SUBDEVICE, 0x20800119, NULL, 0, &st);
    CHECK(r == 0 && st == NV_OK, "RM_CONTROL on the dup");
    CHECK(close(D) == 0, "close dup");
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        report("child_pid", "%d", getpid());
        /* inherited A in the child (cmd 0x20800123) */
        r = rm_control(A, C_HANDLE, SUBDEVICE, 0x20800123, NULL, 0, &st);
        CHECK(r == 0 && st == NV_OK, "RM_CONTROL on the inherited fd");
        /* the child's own open (cmd 0x2080012f) */
        int E = open_dev("/dev/nvidiactl");
        report("child_fd", "%d", E);
        r = rm_control(E, C_HANDLE, SUBDEVICE, 0x2080012f, NULL, 0, &st);
        CHECK(r == 0 && st == NV_OK, "RM_CONTROL on the child's own fd");
        close(E);
        _exit(0);
    }
    int ws;
    CHECK(waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "child");
    close(A);
    report("done", "1");
}

/* ---- fds that stop being NVIDIA files without close() ------------------------ */

static void scenario_stale2(int b) {
    /* After execve: B was O_CLOEXEC, so it is free now. Make a pipe land on it. */
    for (;;) {
        int fd = open("/dev/null", O_RDONLY);
        CHECK(fd >= 0 && fd <= b, "open /dev/null: %d (want <= %d)", fd, b);
        if (fd == b) {
            close(fd);
            break;
        }
    }
    int q[2];
    CHECK(pipe(q) == 0 && q[0] == b, "pipe after exec: %d, want %d", q[0], b);
    int avail = -1;
    CHECK(ioctl(b, FIONREAD, &avail) == 0 && avail == 0, "FIONREAD after exec");
    report("exec_pipe_fd", "%d", b);
    report("done", "1");
}

static void scenario_stale(void) {
    int A = open_dev("/dev/nvidiactl");
    report("ctl_fd", "%d", A);
    int p[2];
    CHECK(pipe(p) == 0, "pipe");
    /* dup2 closes the nvidiactl file behind A without a close() */
    CHECK(dup2(p[0], A) == A, "dup2");
    int avail = -1;
    CHECK(ioctl(A, FIONREAD, &avail) == 0 && avail == 0, "FIONREAD on the dup2()ed fd");
    int B = open("/dev/nvidiactl", O_RDWR | O_CLOEXEC);
    CHECK(B >= 0, "open B");
    report("cloexec_fd", "%d", B);
    char arg[16];
    snprintf(arg, sizeof(arg), "%d", B);
    char *argv[] = {"client", "stale2", arg, NULL};
    execv("/proc/self/exe", argv);
    fail("execv: %s", strerror(errno));
}

/* ---- processes that exit with NVIDIA fds open ---------------------------------- */

/* One child (vfork: much cheaper than fork) that opens /dev/nvidiactl and
 * exits without closing it; its exit status. */
static __attribute__((noinline)) int child_opens_and_exits(void) {
    pid_t pid = vfork();
    if (pid == 0) {
        int fd = open("/dev/nvidiactl", O_RDWR);
        _exit(fd >= 0 ? 0 : 1);
    }
    int ws;
    if (pid < 0 || waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws))
        return -1;
    return WEXITSTATUS(ws);
}

static void scenario_exits(int n) {
    for (int i = 0; i < n; i++)
        CHECK(child_opens_and_exits() == 0, "child %d", i);
    int A = open_dev("/dev/nvidiactl");
    report("ctl_fd", "%d", A);
    uint32_t st;
    long r = rm_control(A, C_HANDLE, SUBDEVICE, 0x20800142, NULL, 0, &st);
    CHECK(r == 0 && st == NV_OK, "RM_CONTROL after the children");
    close(A);
    report("done", "1");
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && strcmp(argv[1], "all") == 0)
        scenario_all();
    else if (argc == 4 && strcmp(argv[1], "threads") == 0)
        scenario_threads(atoi(argv[2]), atoi(argv[3]));
    else if (argc == 2 && strcmp(argv[1], "inherit") == 0)
        scenario_inherit();
    else if (argc == 2 && strcmp(argv[1], "stale") == 0)
        scenario_stale();
    else if (argc == 3 && strcmp(argv[1], "exits") == 0)
        scenario_exits(atoi(argv[2]));
    else if (argc == 3 && strcmp(argv[1], "stale2") == 0)
        scenario_stale2(atoi(argv[2]));
    else {
        fprintf(stderr, "usage: client all | threads T N | inherit | stale | exits N\n");
        return 2;
    }
    return 0;
}
