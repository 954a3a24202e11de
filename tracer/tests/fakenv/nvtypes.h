/*
 * The NVIDIA ioctl parameter structs the fakenv client and fake libcuda use,
 * x86-64 layouts (offsets from /work/shared/reference/nvidia-ioctl.md, which
 * took them from NVIDIA/open-gpu-kernel-modules@580.142 nvos.h and
 * nv-ioctl.h; checked below with static asserts), and the real request
 * numbers: _IOWR('F', nr, sizeof(struct)) for the frontend, plain numbers
 * for UVM.
 */
#ifndef FAKENV_NVTYPES_H
#define FAKENV_NVTYPES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>

#define NV_IOCTL_MAGIC 'F'
#define NV_IOWR(nr, type) _IOWR(NV_IOCTL_MAGIC, nr, type)

#define NV_ESC_RM_FREE 0x29
#define NV_ESC_RM_CONTROL 0x2A
#define NV_ESC_RM_ALLOC 0x2B
#define NV_ESC_RM_VID_HEAP_CONTROL 0x4A
#define NV_ESC_RM_MAP_MEMORY 0x4E
#define NV_ESC_CARD_INFO 0xC8
#define NV_ESC_REGISTER_FD 0xC9
#define NV_ESC_ALLOC_OS_EVENT 0xCE
#define NV_ESC_CHECK_VERSION_STR 0xD2
#define NV_ESC_IOCTL_XFER_CMD 0xD3
#define NV_ESC_ATTACH_GPUS_TO_FD 0xD4

#define UVM_INITIALIZE 0x30000001u
#define UVM_PAGEABLE_MEM_ACCESS 39u

#define NV01_ROOT 0x0000u
#define NV01_ROOT_CLIENT 0x0041u
#define NV01_MEMORY_LOCAL_USER 0x0040u
#define NV01_DEVICE_0 0x0080u
#define NV20_SUBDEVICE_0 0x2080u

#define NV_OK 0x0u
#define NV_ERR_ILLEGAL_ACTION 0x16u
#define NV_ERR_INVALID_CLASS 0x22u
#define NV_ERR_NOT_SUPPORTED 0x56u

typedef uint32_t NvHandle;

typedef struct { /* NV_ESC_RM_FREE */
    NvHandle hRoot, hObjectParent, hObjectOld;
    uint32_t status;
} NVOS00_PARAMETERS;

typedef struct { /* NV_ESC_RM_ALLOC, 32-byte form */
    NvHandle hRoot, hObjectParent, hObjectNew;
    uint32_t hClass;
    uint64_t pAllocParms;
    uint32_t paramsSize;
    uint32_t status;
} NVOS21_PARAMETERS;

typedef struct { /* NV_ESC_RM_ALLOC, 48-byte form (CUDA's) */
    NvHandle hRoot, hObjectParent, hObjectNew;
    uint32_t hClass;
    uint64_t pAllocParms;
    uint64_t pRightsRequested;
    uint32_t paramsSize;
    uint32_t flags;
    uint32_t status;
    uint32_t _pad;
} NVOS64_PARAMETERS;

typedef struct { /* NV_ESC_RM_CONTROL */
    NvHandle hClient, hObject;
    uint32_t cmd;
    uint32_t flags;
    uint64_t params;
    uint32_t paramsSize;
    uint32_t status;
} NVOS54_PARAMETERS;

typedef struct { /* NV_ESC_RM_VID_HEAP_CONTROL */
    NvHandle hRoot, hObjectParent;
    uint32_t function;
    NvHandle hVASpace;
    int16_t ivcHeapNumber;
    uint16_t _pad;
    uint32_t status;
    uint64_t total;
    uint64_t free;
    union {
        struct { /* NVOS32_FUNCTION_ALLOC_SIZE (2) */
            uint32_t owner;      /* @40 */
            NvHandle hMemory;    /* @44 */
            uint32_t type;       /* @48 */
            uint32_t flags;      /* @52 */
            uint32_t attr;       /* @56 */
            uint32_t format;     /* @60 */
            uint32_t _mid[6];    /* @64: comprCovg, zcullCovg, partitionStride, width, height, pitch */
            uint64_t size;       /* @88 */
            uint64_t alignment;  /* @96 */
            uint64_t offset;     /* @104 */
            uint64_t limit;      /* @112 */
            uint64_t address;    /* @120 */
            uint64_t rangeBegin; /* @128 */
            uint64_t rangeEnd;   /* @136 */
            uint32_t attr2;      /* @144 */
            uint32_t ctagOffset; /* @148 */
            int32_t numaNode;    /* @152 */
        } AllocSize;
        unsigned char raw[144];
    } data;
} NVOS32_PARAMETERS;

typedef struct { /* NV_ESC_RM_MAP_MEMORY: nv_ioctl_nvos33_parameters_with_fd */
    NvHandle hClient, hDevice, hMemory;
    uint32_t _pad0;
    uint64_t offset;
    uint64_t length;
    uint64_t pLinearAddress;
    uint32_t status;
    uint32_t flags;
    int32_t fd;
    uint32_t _pad1;
} NVOS33_WITH_FD;

typedef struct { /* NV_ESC_CHECK_VERSION_STR */
    uint32_t cmd;
    uint32_t reply;
    char versionString[64];
} nv_ioctl_rm_api_version_t;

typedef struct { /* NV_ESC_CARD_INFO, one slot */
    unsigned char bytes[72];
} nv_ioctl_card_info_t;

typedef struct { /* NV_ESC_REGISTER_FD */
    int32_t ctl_fd;
} nv_ioctl_register_fd_t;

typedef struct { /* NV_ESC_ALLOC_OS_EVENT */
    NvHandle hClient, hDevice;
    uint32_t fd;
    uint32_t Status;
} nv_ioctl_alloc_os_event_t;

typedef struct { /* NV_ESC_IOCTL_XFER_CMD */
    uint32_t cmd;
    uint32_t size;
    uint64_t ptr;
} nv_ioctl_xfer_t;

typedef struct {
    uint64_t flags;
    uint32_t rmStatus;
    uint32_t _pad;
} UVM_INITIALIZE_PARAMS;

typedef struct {
    uint8_t pageableMemAccess;
    uint8_t _pad[3];
    uint32_t rmStatus;
} UVM_PAGEABLE_MEM_ACCESS_PARAMS;

_Static_assert(sizeof(NVOS00_PARAMETERS) == 16, "NVOS00");
_Static_assert(sizeof(NVOS21_PARAMETERS) == 32 && offsetof(NVOS21_PARAMETERS, status) == 28, "NVOS21");
_Static_assert(sizeof(NVOS64_PARAMETERS) == 48 && offsetof(NVOS64_PARAMETERS, status) == 40, "NVOS64");
_Static_assert(sizeof(NVOS54_PARAMETERS) == 32 && offsetof(NVOS54_PARAMETERS, status) == 28, "NVOS54");
_Static_assert(sizeof(NVOS32_PARAMETERS) == 184 && offsetof(NVOS32_PARAMETERS, status) == 20 &&
                   offsetof(NVOS32_PARAMETERS, data.AllocSize.size) == 88 &&
                   offsetof(NVOS32_PARAMETERS, data.AllocSize.numaNode) == 152,
               "NVOS32");
_Static_assert(sizeof(NVOS33_WITH_FD) == 56 && offsetof(NVOS33_WITH_FD, pLinearAddress) == 32 &&
                   offsetof(NVOS33_WITH_FD, status) == 40 && offsetof(NVOS33_WITH_FD, fd) == 48,
               "NVOS33");
_Static_assert(sizeof(nv_ioctl_rm_api_version_t) == 72, "rm_api_version");
_Static_assert(sizeof(nv_ioctl_alloc_os_event_t) == 16, "os_event");
_Static_assert(sizeof(nv_ioctl_xfer_t) == 16, "xfer");
_Static_assert(sizeof(UVM_INITIALIZE_PARAMS) == 16, "UVM_INITIALIZE");
_Static_assert(sizeof(UVM_PAGEABLE_MEM_ACCESS_PARAMS) == 8, "UVM_PAGEABLE_MEM_ACCESS");

#endif
