/*
 * fakenv_fuse: a stand-in for NVIDIA's device files, for tracer's root tests
 * on machines without a GPU or driver (../root_ioctls.rs).
 *
 * A libfuse3 filesystem (high-level API) exposing regular files nvidiactl,
 * nvidia0, nvidia-uvm and nvidia-uvm-tools (mode 0666, 1 MiB of zeros each).
 * The tests bind-mount them over /dev/nvidiactl etc. (in a private mount
 * namespace), so a program opening the real paths reaches this daemon. Its `ioctl` operation answers like the
 * NVIDIA open driver 580 would (see /work/shared/reference/nvidia-ioctl.md and
 * the table below), deterministically; it logs nothing.
 *
 * Run: fakenv_fuse MOUNTPOINT -f -s -o allow_other,auto_unmount,fsname=fakenv,subtype=fakenv
 * (allow_other: with sudo, tracer runs the traced command as the invoking user.)
 * Build: cc -Wall -Wextra $(pkg-config --cflags fuse3) fakenv_fuse.c $(pkg-config --libs fuse3)
 * (-DFAKENV_PROBE: the probe build used by probe.c, see fake_ioctl).
 *
 * How FUSE passes ioctls on regular files (checked on Linux 6.18 with
 * ./probe.c; fs/fuse/ioctl.c: fuse_file_ioctl -> fuse_do_ioctl(flags 0)):
 *  - they are "restricted": the kernel reads _IOC_DIR/_IOC_SIZE of the request.
 *    _IOC_WRITE: it copies _IOC_SIZE bytes from the caller to the daemon
 *    (`data` below); _IOC_READ: it copies `data` back to the caller after the
 *    daemon replied successfully. NVIDIA's frontend requests are
 *    _IOWR('F', nr, size), so both happen. The `arg` pointer value itself is
 *    passed too.
 *  - an error reply (-errno) copies nothing back. The real driver copies the
 *    struct back even when the ioctl fails (except -EFAULT), so on a failing
 *    escape this daemon writes the struct into the caller itself (below).
 *  - _IOC_NONE requests (every UVM request: plain numbers such as 0x30000001,
 *    whose size bits are not a size) move no data at all, and the daemon
 *    sees data == NULL; they still reach the daemon (not -ENOTTY).
 *  - sizes up to 16383 (the largest _IOC_SIZE) work; the files can be
 *    mmapped MAP_SHARED read/write (page cache).
 *  - numbers the VFS handles itself never reach the daemon (FIBMAP = 1 and
 *    FIGETBSZ = 2 = UVM_RESERVE_VA / UVM_RELEASE_VA, FIONREAD 0x541b,
 *    FIOCLEX, ...): the tests avoid them on these files.
 *  - the daemon cannot follow pointers inside the struct (XFER_CMD's ptr).
 * So for what the kernel does not carry (the XFER_CMD inner struct, UVM
 * structs, the copy-back on failure) the daemon reads and writes the
 * caller's memory directly with process_vm_readv/process_vm_writev (the
 * caller's tid is fuse_get_context()->pid; the daemon runs as root). The
 * caller is blocked in its ioctl meanwhile, so its syscall-exit tracepoint
 * sees the new bytes, as with the real driver.
 *
 * Emulated (frontend, on nvidiactl unless noted):
 *   RM_ALLOC 0x2B (NVOS21 32 / NVOS64 48): NV01_ROOT/_NON_PRIV/_CLIENT -> hClass
 *     rewritten to NV01_ROOT_CLIENT (0x41), hObjectNew 0 -> 0xc1d00001,
 *     0xc1d00002, ...; other classes with hObjectNew 0 -> 0xcaf00001, ...
 *     (counted per open file, so values do not depend on earlier tests);
 *     hClass 0xdead -> status NV_ERR_INVALID_CLASS (0x22); else NV_OK.
 *   RM_CONTROL 0x2A (NVOS54 32): cmd 0x20803002 (NVLINK_GET_NVLINK_STATUS)
 *     -> NV_ERR_NOT_SUPPORTED (0x56); hClient 0 -> NV_ERR_INVALID_CLIENT
 *     (0x23); else NV_OK.
 *   RM_FREE 0x29 (16), ALLOC_OS_EVENT 0xCE / FREE_OS_EVENT 0xCF (16),
 *     DUP_OBJECT 0x34 (28), SHARE 0x35 (24), UNMAP_MEMORY 0x4F (32),
 *     MAP_MEMORY_DMA 0x57 (64), UNMAP_MEMORY_DMA 0x58 (48),
 *     UPDATE_DEVICE_MAPPING_INFO 0x5E (40), ALLOC_MEMORY 0x27 (56, GPU fd):
 *     status NV_OK.
 *   RM_VID_HEAP_CONTROL 0x4A (184): total 80 GiB, free 70 GiB, NV_OK; for
 *     function ALLOC_SIZE (2) also hMemory (if 0) as RM_ALLOC does, offset
 *     0x200000, limit 0x200000 + size - 1.
 *   RM_MAP_MEMORY 0x4E (56): pLinearAddress = 0x10000 (the mmap offset to
 *     use on the GPU fd), NV_OK.
 *   CARD_INFO 0xC8 (n*72): entry 0 valid (bus 0x41, 10de:2335, gpu_id
 *     0x4100, minor 0), the others zero.
 *   CHECK_VERSION_STR 0xD2 (72): versionString "580.142" (or cmd '2', query)
 *     -> reply 1; else reply 0, versionString = "580.142", ioctl -EINVAL.
 *   REGISTER_FD 0xC9 (4), ATTACH_GPUS_TO_FD 0xD4 (4n), SYS_PARAMS 0xD6 (8):
 *     0, nothing written. WAIT_OPEN_COMPLETE 0xDA (8): rc 0, adapterStatus 0.
 *   IOCTL_XFER_CMD 0xD3 (16): the inner escape `cmd` on the `size` bytes at
 *     `ptr`, as above (size > 16384 or a nested XFER: -EINVAL).
 *   RM escapes on a GPU fd (except ALLOC_MEMORY) and ALLOC_MEMORY on the ctl
 *     fd: -EINVAL, as NV_CTL_DEVICE_ONLY / NV_ACTUAL_DEVICE_ONLY do.
 *   A struct size that no layout has: -EINVAL. Any other nr: -EINVAL, the
 *     struct copied back unchanged (RmIoctl's "unknown NVRM ioctl command").
 * UVM (nvidia-uvm; the request is the command number):
 *   UVM_INITIALIZE 0x30000001 (16): rmStatus@8 = NV_OK; marks the open file
 *     initialised. UVM_DEINITIALIZE 0x30000002: 0. UVM_MM_INITIALIZE 0x4B (8):
 *     NV_OK. Other commands of the table below before INITIALIZE:
 *     rmStatus = NV_ERR_ILLEGAL_ACTION (0x16); after: NV_OK, plus
 *     UVM_PAGEABLE_MEM_ACCESS 0x27 -> pageableMemAccess 1,
 *     UVM_CREATE_RANGE_GROUP 0x17 -> rangeGroupId 1, 2, ... Anything else: -EINVAL.
 * nvidia-uvm-tools: every ioctl -EINVAL.
 */
#define FUSE_USE_VERSION 35
#define _GNU_SOURCE

#include <errno.h>
#include <fuse.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define FILE_SIZE (1u << 20)
#define MAX_IOCTL_SIZE 16384u /* NV_ABSOLUTE_MAX_IOCTL_SIZE */
#define DRIVER_VERSION "580.142"

enum kind { CTL, GPU, UVM, UVM_TOOLS };

struct dev {
    const char *path;
    enum kind kind;
};

static const struct dev devs[] = {
    {"/nvidiactl", CTL},
    {"/nvidia0", GPU},
    {"/nvidia-uvm", UVM},
    {"/nvidia-uvm-tools", UVM_TOOLS},
};
#define NDEVS (sizeof(devs) / sizeof(devs[0]))

/* Per open file. Handles are counted per open file, so that what one test
 * sees does not depend on what ran before it. */
struct handle {
    enum kind kind;
    int uvm_initialized;
    uint32_t next_client; /* RM-generated client handles: 0xc1d00001, ... */
    uint32_t next_object; /* RM-generated object handles: 0xcaf00001, ... */
    uint64_t next_range_group;
};

/* NV_STATUS values (nvstatuscodes.h). */
#define NV_OK 0x0u
#define NV_ERR_ILLEGAL_ACTION 0x16u
#define NV_ERR_INVALID_CLASS 0x22u
#define NV_ERR_INVALID_CLIENT 0x23u
#define NV_ERR_NOT_SUPPORTED 0x56u

static const struct dev *find_dev(const char *path) {
    for (size_t i = 0; i < NDEVS; i++)
        if (strcmp(path, devs[i].path) == 0)
            return &devs[i];
    return NULL;
}

static uint32_t get32(const unsigned char *b, size_t off) {
    uint32_t v;
    memcpy(&v, b + off, 4);
    return v;
}

static void put32(unsigned char *b, size_t off, uint32_t v) { memcpy(b + off, &v, 4); }

static void put64(unsigned char *b, size_t off, uint64_t v) { memcpy(b + off, &v, 8); }

static void put16(unsigned char *b, size_t off, uint16_t v) { memcpy(b + off, &v, 2); }

/* ---- the caller's memory ------------------------------------------------ */

static int remote_read(pid_t pid, uint64_t addr, void *buf, size_t len) {
    struct iovec local = {buf, len};
    struct iovec remote = {(void *)(uintptr_t)addr, len};
    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static int remote_write(pid_t pid, uint64_t addr, const void *buf, size_t len) {
    struct iovec local = {(void *)buf, len};
    struct iovec remote = {(void *)(uintptr_t)addr, len};
    return process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* ---- frontend escapes ------------------------------------------------------ */

#define ESC_RM_ALLOC_MEMORY 0x27u
#define ESC_RM_FREE 0x29u
#define ESC_RM_CONTROL 0x2Au
#define ESC_RM_ALLOC 0x2Bu
#define ESC_RM_DUP_OBJECT 0x34u
#define ESC_RM_SHARE 0x35u
#define ESC_RM_VID_HEAP_CONTROL 0x4Au
#define ESC_RM_MAP_MEMORY 0x4Eu
#define ESC_RM_UNMAP_MEMORY 0x4Fu
#define ESC_RM_MAP_MEMORY_DMA 0x57u
#define ESC_RM_UNMAP_MEMORY_DMA 0x58u
#define ESC_RM_UPDATE_DEVICE_MAPPING_INFO 0x5Eu
#define ESC_CARD_INFO 0xC8u
#define ESC_REGISTER_FD 0xC9u
#define ESC_ALLOC_OS_EVENT 0xCEu
#define ESC_FREE_OS_EVENT 0xCFu
#define ESC_CHECK_VERSION_STR 0xD2u
#define ESC_IOCTL_XFER_CMD 0xD3u
#define ESC_ATTACH_GPUS_TO_FD 0xD4u
#define ESC_SYS_PARAMS 0xD6u
#define ESC_WAIT_OPEN_COMPLETE 0xDAu

/* RM escapes whose only output is the status: (nr, size, status offset). */
static const struct {
    unsigned nr, size, status;
} plain_rm[] = {
    {ESC_RM_ALLOC_MEMORY, 56, 40},  {ESC_RM_FREE, 16, 12},         {ESC_RM_DUP_OBJECT, 28, 24},
    {ESC_RM_SHARE, 24, 20},         {ESC_RM_UNMAP_MEMORY, 32, 24}, {ESC_RM_MAP_MEMORY_DMA, 64, 56},
    {ESC_RM_UNMAP_MEMORY_DMA, 48, 40}, {ESC_RM_UPDATE_DEVICE_MAPPING_INFO, 40, 32},
    {ESC_ALLOC_OS_EVENT, 16, 12},   {ESC_FREE_OS_EVENT, 16, 12},
};
#define NPLAIN (sizeof(plain_rm) / sizeof(plain_rm[0]))

static int is_rm_escape(unsigned nr) {
    return nr == ESC_RM_CONTROL || nr == ESC_RM_ALLOC || nr == ESC_RM_VID_HEAP_CONTROL || nr == ESC_RM_MAP_MEMORY ||
           (nr >= 0x27 && nr <= 0x5F);
}

static uint32_t rm_alloc(struct handle *h, unsigned char *b) {
    /* hRoot@0 hObjectParent@4 hObjectNew@8 hClass@12 (both forms) */
    uint32_t cls = get32(b, 12);
    if (cls == 0xdead)
        return NV_ERR_INVALID_CLASS;
    if (cls == 0x0 || cls == 0x1 || cls == 0x41) {
        put32(b, 12, 0x41);
        if (get32(b, 8) == 0)
            put32(b, 8, ++h->next_client);
    } else if (get32(b, 8) == 0) {
        put32(b, 8, ++h->next_object);
    }
    return NV_OK;
}

static void card_info(unsigned char *b, unsigned size) {
    memset(b, 0, size);
    if (size < 72)
        return;
    b[0] = 1;                            /* valid */
    put32(b, 4, 0);                      /* pci_info.domain */
    b[8] = 0x41;                         /* bus */
    b[9] = 0;                            /* slot */
    b[10] = 0;                           /* function */
    put16(b, 12, 0x10de);                /* vendor_id */
    put16(b, 14, 0x2335);                /* device_id (H200) */
    put32(b, 16, 0x4100);                /* gpu_id */
    put16(b, 20, 0xff);                  /* interrupt_line */
    put64(b, 24, 0xfa000000ull);         /* reg_address */
    put64(b, 32, 0x1000000ull);          /* reg_size */
    put64(b, 40, 0x38000000000ull);      /* fb_address */
    put64(b, 48, 0x2400000000ull);       /* fb_size */
    put32(b, 56, 0);                     /* minor_number */
    memcpy(b + 60, "nvidia0", 8);        /* dev_name[10] */
}

/*
 * Runs escape `nr` on the `size`-byte struct `b` (already holding the
 * caller's bytes) as the driver would; returns the ioctl's result.
 */
static int escape(struct handle *h, unsigned nr, unsigned char *b, unsigned size) {
    enum kind kind = h->kind;
    if (kind == GPU && is_rm_escape(nr) && nr != ESC_RM_ALLOC_MEMORY)
        return -EINVAL; /* NV_CTL_DEVICE_ONLY */
    if (kind == CTL && nr == ESC_RM_ALLOC_MEMORY)
        return -EINVAL; /* NV_ACTUAL_DEVICE_ONLY */
    for (size_t i = 0; i < NPLAIN; i++) {
        if (plain_rm[i].nr != nr)
            continue;
        if (size != plain_rm[i].size)
            return -EINVAL;
        put32(b, plain_rm[i].status, NV_OK);
        return 0;
    }
    switch (nr) {
    case ESC_RM_ALLOC:
        if (size != 32 && size != 48)
            return -EINVAL;
        put32(b, size == 32 ? 28 : 40, rm_alloc(h, b));
        return 0;
    case ESC_RM_CONTROL: {
        if (size != 32)
            return -EINVAL;
        uint32_t st = NV_OK;
        if (get32(b, 0) == 0)
            st = NV_ERR_INVALID_CLIENT;
        else if (get32(b, 8) == 0x20803002)
            st = NV_ERR_NOT_SUPPORTED;
        put32(b, 28, st);
        return 0;
    }
    case ESC_RM_VID_HEAP_CONTROL:
        if (size != 184)
            return -EINVAL;
        if (get32(b, 8) == 2 || get32(b, 8) == 14) { /* ALLOC_SIZE / ALLOC_SIZE_RANGE */
            uint64_t sz;
            memcpy(&sz, b + 88, 8);
            if (get32(b, 44) == 0)
                put32(b, 44, ++h->next_object); /* hMemory */
            put64(b, 104, 0x200000);            /* offset */
            put64(b, 112, 0x200000 + sz - 1);   /* limit */
        }
        put32(b, 20, NV_OK);
        put64(b, 24, 80ull << 30);
        put64(b, 32, 70ull << 30);
        return 0;
    case ESC_RM_MAP_MEMORY:
        if (size != 56)
            return -EINVAL;
        put64(b, 32, 0x10000);
        put32(b, 40, NV_OK);
        return 0;
    case ESC_CARD_INFO:
        if (size == 0 || size % 72 != 0)
            return -EINVAL;
        card_info(b, size);
        return 0;
    case ESC_CHECK_VERSION_STR: {
        if (size != 72)
            return -EINVAL;
        uint32_t cmd = get32(b, 0);
        int ok = cmd == '2' || strncmp((const char *)b + 8, DRIVER_VERSION, 64) == 0;
        put32(b, 4, ok ? 1 : 0);
        if (!ok || cmd == '2') {
            memset(b + 8, 0, 64);
            memcpy(b + 8, DRIVER_VERSION, sizeof(DRIVER_VERSION));
        }
        return ok ? 0 : -EINVAL;
    }
    case ESC_REGISTER_FD:
        return size == 4 ? 0 : -EINVAL;
    case ESC_ATTACH_GPUS_TO_FD:
        return size != 0 && size % 4 == 0 ? 0 : -EINVAL;
    case ESC_SYS_PARAMS:
        return size == 8 ? 0 : -EINVAL;
    case ESC_WAIT_OPEN_COMPLETE:
        if (size != 8)
            return -EINVAL;
        put32(b, 0, 0);
        put32(b, 4, NV_OK);
        return 0;
    default:
        return -EINVAL;
    }
}

static int frontend_ioctl(struct handle *h, unsigned int cmd, uint64_t arg, void *data, pid_t pid) {
    unsigned nr = _IOC_NR(cmd), size = _IOC_SIZE(cmd);
    int rw = _IOC_DIR(cmd) == (_IOC_READ | _IOC_WRITE) && data != NULL;
    if (nr == ESC_IOCTL_XFER_CMD) {
        unsigned char hdr[16];
        if (size != 16)
            return -EINVAL;
        if (rw)
            memcpy(hdr, data, 16);
        else if (remote_read(pid, arg, hdr, 16) < 0)
            return -EFAULT;
        unsigned inner = get32(hdr, 0), isize = get32(hdr, 4);
        uint64_t ptr;
        memcpy(&ptr, hdr + 8, 8);
        if (isize > MAX_IOCTL_SIZE || inner == ESC_IOCTL_XFER_CMD)
            return -EINVAL;
        unsigned char *b = calloc(1, isize ? isize : 1);
        if (!b)
            return -ENOMEM;
        int r = remote_read(pid, ptr, b, isize);
        if (r == 0) {
            r = escape(h, inner, b, isize);
            if (remote_write(pid, ptr, b, isize) < 0)
                r = -EFAULT;
        }
        free(b);
        return r;
    }
    if (rw) {
        /* The kernel copied the struct in and copies `data` back on success. */
        int r = escape(h, nr, data, size);
        if (r < 0)
            (void)remote_write(pid, arg, data, size); /* the driver copies back on failure too */
        return r;
    }
    /* Not _IOWR (the driver ignores the direction bits): do it by hand. */
    unsigned char *b = calloc(1, size ? size : 1);
    if (!b)
        return -ENOMEM;
    int r = remote_read(pid, arg, b, size);
    if (r == 0) {
        r = escape(h, nr, b, size);
        if (remote_write(pid, arg, b, size) < 0)
            r = -EFAULT;
    }
    free(b);
    return r;
}

/* ---- UVM ------------------------------------------------------------------- */

/* Routed UVM commands: (number, struct size, rmStatus offset). */
static const struct {
    uint32_t cmd;
    unsigned size, status;
} uvm_cmds[] = {
    {0x17, 16, 8},  /* CREATE_RANGE_GROUP */
    {0x18, 16, 8},  /* DESTROY_RANGE_GROUP */
    {0x19, 32, 28}, /* REGISTER_GPU_VASPACE */
    {0x1A, 20, 16}, /* UNREGISTER_GPU_VASPACE */
    {0x1B, 56, 48}, /* REGISTER_CHANNEL */
    {0x1C, 28, 24}, /* UNREGISTER_CHANNEL */
    {0x21, 9264, 9260}, /* MAP_EXTERNAL_ALLOCATION */
    {0x22, 24, 16}, /* FREE */
    {0x25, 40, 36}, /* REGISTER_GPU */
    {0x26, 20, 16}, /* UNREGISTER_GPU */
    {0x27, 8, 4},   /* PAGEABLE_MEM_ACCESS */
    {0x33, 80, 72}, /* MIGRATE */
    {0x41, 40, 32}, /* MAP_DYNAMIC_PARALLELISM_REGION */
    {0x42, 40, 32}, /* UNMAP_EXTERNAL */
    {0x44, 9248, 9240}, /* ALLOC_SEMAPHORE_POOL */
    {0x48, 24, 16}, /* VALIDATE_VA_RANGE */
    {0x49, 24, 16}, /* CREATE_EXTERNAL_RANGE */
    {0x4B, 8, 4},   /* MM_INITIALIZE */
    {0x30000001, 16, 8}, /* INITIALIZE */
};
#define NUVM (sizeof(uvm_cmds) / sizeof(uvm_cmds[0]))

static int uvm_ioctl(struct handle *h, unsigned int cmd, uint64_t arg, pid_t pid) {
    if (h->kind == UVM_TOOLS)
        return -EINVAL;
    if (cmd == 0x30000002) /* DEINITIALIZE: no parameters */
        return 0;
    for (size_t i = 0; i < NUVM; i++) {
        if (uvm_cmds[i].cmd != cmd)
            continue;
        unsigned size = uvm_cmds[i].size;
        unsigned char *b = calloc(1, size);
        if (!b)
            return -ENOMEM;
        int r = remote_read(pid, arg, b, size);
        if (r == 0) {
            uint32_t st = NV_OK;
            if (cmd == 0x30000001)
                h->uvm_initialized = 1;
            else if (cmd != 0x4B && !h->uvm_initialized)
                st = NV_ERR_ILLEGAL_ACTION;
            else if (cmd == 0x27)
                b[0] = 1; /* pageableMemAccess */
            else if (cmd == 0x17)
                put64(b, 0, ++h->next_range_group);
            put32(b, uvm_cmds[i].status, st);
            r = remote_write(pid, arg, b, size);
        }
        free(b);
        return r;
    }
    return -EINVAL;
}

/* ---- filesystem operations --------------------------------------------- */

static void *fake_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
    (void)conn;
    cfg->use_ino = 0;
    cfg->entry_timeout = 3600;
    cfg->attr_timeout = 3600;
    cfg->negative_timeout = 0;
    cfg->kernel_cache = 1;
    return NULL;
}

static int fake_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
    (void)fi;
    memset(st, 0, sizeof(*st));
    if (strcmp(path, "/") == 0) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        return 0;
    }
    if (!find_dev(path))
        return -ENOENT;
    st->st_mode = S_IFREG | 0666;
    st->st_nlink = 1;
    st->st_size = FILE_SIZE;
    st->st_blocks = FILE_SIZE / 512;
    return 0;
}

static int fake_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
                        enum fuse_readdir_flags flags) {
    (void)off;
    (void)fi;
    (void)flags;
    if (strcmp(path, "/") != 0)
        return -ENOENT;
    fill(buf, ".", NULL, 0, 0);
    fill(buf, "..", NULL, 0, 0);
    for (size_t i = 0; i < NDEVS; i++)
        fill(buf, devs[i].path + 1, NULL, 0, 0);
    return 0;
}

static int fake_open(const char *path, struct fuse_file_info *fi) {
    const struct dev *d = find_dev(path);
    if (!d)
        return -ENOENT;
    struct handle *h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    h->kind = d->kind;
    h->next_client = 0xc1d00000u;
    h->next_object = 0xcaf00000u;
    fi->fh = (uint64_t)(uintptr_t)h;
    fi->keep_cache = 1;
    return 0;
}

static int fake_release(const char *path, struct fuse_file_info *fi) {
    (void)path;
    free((void *)(uintptr_t)fi->fh);
    return 0;
}

static int fake_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)path;
    (void)fi;
    if (off >= (off_t)FILE_SIZE)
        return 0;
    if (size > FILE_SIZE - (size_t)off)
        size = FILE_SIZE - (size_t)off;
    memset(buf, 0, size);
    return (int)size;
}

static int fake_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)path;
    (void)buf;
    (void)off;
    (void)fi;
    return (int)size; /* discarded */
}

static int fake_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
    (void)path;
    (void)size;
    (void)fi;
    return 0;
}

static int fake_ioctl(const char *path, unsigned int cmd, void *arg, struct fuse_file_info *fi, unsigned int flags,
                      void *data) {
    (void)path;
    (void)flags;
    struct handle *h = (struct handle *)(uintptr_t)fi->fh;
    pid_t pid = fuse_get_context()->pid;
    if (!h)
        return -EBADF;
#ifdef FAKENV_PROBE
    /*
     * Probe build (see probe.c): shows what the kernel itself carries. Flips
     * every byte of `data`; returns 1 when the kernel passed a buffer, 2 when
     * not; nr 0x77: flips, then fails with -EIO; nr 0x78: returns the low 31
     * bits of `arg`; nr 0x79: returns the caller's tid as the daemon sees it.
     */
    if (data)
        for (unsigned i = 0; i < _IOC_SIZE(cmd); i++)
            ((unsigned char *)data)[i] ^= 0xff;
    if (_IOC_NR(cmd) == 0x77)
        return -EIO;
    if (_IOC_NR(cmd) == 0x78)
        return (int)((uintptr_t)arg & 0x7fffffff);
    if (_IOC_NR(cmd) == 0x79)
        return (int)pid;
    return data ? 1 : 2;
#endif
    if (h->kind == UVM || h->kind == UVM_TOOLS)
        return uvm_ioctl(h, cmd, (uint64_t)(uintptr_t)arg, pid);
    return frontend_ioctl(h, cmd, (uint64_t)(uintptr_t)arg, data, pid);
}

static const struct fuse_operations ops = {
    .init = fake_init,
    .getattr = fake_getattr,
    .readdir = fake_readdir,
    .open = fake_open,
    .release = fake_release,
    .read = fake_read,
    .write = fake_write,
    .truncate = fake_truncate,
    .ioctl = fake_ioctl,
};

int main(int argc, char *argv[]) { return fuse_main(argc, argv, &ops, NULL); }
