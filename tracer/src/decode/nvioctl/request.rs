//! Frontend request numbers (/dev/nvidiactl, /dev/nvidiaN): the Linux `_IOC`
//! encoding, the escape numbers and their names, and the NV_ESC_IOCTL_XFER_CMD
//! unwrap.
//!
//! The driver (`nvidia_ioctl` in kernel-open/nvidia/nv.c) reads only `_IOC_NR`
//! (the escape) and `_IOC_SIZE` (the parameter struct's length) of the request;
//! it ignores dir and type. The syscall passes the request as `unsigned int`,
//! so only its low 32 bits count.

/// Linux `_IOC` field widths (include/uapi/asm-generic/ioctl.h, x86).
const IOC_NRBITS: u32 = 8;
const IOC_TYPEBITS: u32 = 8;
const IOC_SIZEBITS: u32 = 14;
const IOC_NRSHIFT: u32 = 0;
const IOC_TYPESHIFT: u32 = IOC_NRSHIFT + IOC_NRBITS;
const IOC_SIZESHIFT: u32 = IOC_TYPESHIFT + IOC_TYPEBITS;
const IOC_DIRSHIFT: u32 = IOC_SIZESHIFT + IOC_SIZEBITS;
/// `_IOC_READ | _IOC_WRITE`, what the NVIDIA user-mode driver uses (`_IOWR`).
pub const IOC_READ_WRITE: u32 = 3;

/// A request number split into its `_IOC` fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ioc {
    pub dir: u32,
    pub ty: u32,
    pub nr: u32,
    pub size: u32,
}

/// Splits a request into `_IOC_DIR`, `_IOC_TYPE`, `_IOC_NR`, `_IOC_SIZE`
/// (of its low 32 bits, as the kernel sees it).
pub fn ioc(request: u64) -> Ioc {
    let r = request as u32;
    Ioc {
        dir: r >> IOC_DIRSHIFT,
        ty: (r >> IOC_TYPESHIFT) & ((1 << IOC_TYPEBITS) - 1),
        nr: (r >> IOC_NRSHIFT) & ((1 << IOC_NRBITS) - 1),
        size: (r >> IOC_SIZESHIFT) & ((1 << IOC_SIZEBITS) - 1),
    }
}

/// `_IOWR(NV_IOCTL_MAGIC, nr, size)`: the request the user-mode driver issues for
/// escape `nr` with a `size`-byte struct (`size` is masked to 14 bits).
pub fn nv_request(nr: u32, size: u32) -> u64 {
    let r = (IOC_READ_WRITE << IOC_DIRSHIFT)
        | ((size & ((1 << IOC_SIZEBITS) - 1)) << IOC_SIZESHIFT)
        | (NV_IOCTL_MAGIC << IOC_TYPESHIFT)
        | ((nr & 0xff) << IOC_NRSHIFT);
    u64::from(r)
}

// Source: NVIDIA/open-gpu-kernel-modules@580.142 kernel-open/common/inc/nv-ioctl-numbers.h,
// kernel-open/common/inc/nv-ioctl-numa.h, kernel-open/common/inc/nv.h.
/// `NV_IOCTL_MAGIC` ('F'), the `_IOC_TYPE` of every frontend request.
pub const NV_IOCTL_MAGIC: u32 = b'F' as u32;
/// `NV_IOCTL_BASE`: the first of the escapes handled by the Linux frontend.
pub const NV_IOCTL_BASE: u32 = 200;
pub const NV_ESC_CARD_INFO: u32 = NV_IOCTL_BASE;
pub const NV_ESC_REGISTER_FD: u32 = NV_IOCTL_BASE + 1;
pub const NV_ESC_ALLOC_OS_EVENT: u32 = NV_IOCTL_BASE + 6;
pub const NV_ESC_FREE_OS_EVENT: u32 = NV_IOCTL_BASE + 7;
pub const NV_ESC_STATUS_CODE: u32 = NV_IOCTL_BASE + 9;
pub const NV_ESC_CHECK_VERSION_STR: u32 = NV_IOCTL_BASE + 10;
pub const NV_ESC_IOCTL_XFER_CMD: u32 = NV_IOCTL_BASE + 11;
pub const NV_ESC_ATTACH_GPUS_TO_FD: u32 = NV_IOCTL_BASE + 12;
pub const NV_ESC_QUERY_DEVICE_INTR: u32 = NV_IOCTL_BASE + 13;
pub const NV_ESC_SYS_PARAMS: u32 = NV_IOCTL_BASE + 14;
pub const NV_ESC_NUMA_INFO: u32 = NV_IOCTL_BASE + 15;
pub const NV_ESC_SET_NUMA_STATUS: u32 = NV_IOCTL_BASE + 16;
pub const NV_ESC_EXPORT_TO_DMABUF_FD: u32 = NV_IOCTL_BASE + 17;
pub const NV_ESC_WAIT_OPEN_COMPLETE: u32 = NV_IOCTL_BASE + 18;
/// `sizeof(nv_ioctl_xfer_t)`: the only request size the driver accepts for XFER.
pub const NV_IOCTL_XFER_SIZE: u32 = 16;
/// `NV_ABSOLUTE_MAX_IOCTL_SIZE` (nv.h): the largest inner size an XFER may carry.
pub const NV_ABSOLUTE_MAX_IOCTL_SIZE: u32 = 16384;

// Source: NVIDIA/open-gpu-kernel-modules@580.142 src/nvidia/arch/nvalloc/unix/include/nv_escape.h.
pub const NV_ESC_RM_ALLOC_MEMORY: u32 = 0x27;
pub const NV_ESC_RM_ALLOC_OBJECT: u32 = 0x28;
pub const NV_ESC_RM_FREE: u32 = 0x29;
pub const NV_ESC_RM_CONTROL: u32 = 0x2A;
pub const NV_ESC_RM_ALLOC: u32 = 0x2B;
pub const NV_ESC_RM_CONFIG_GET: u32 = 0x32;
pub const NV_ESC_RM_CONFIG_SET: u32 = 0x33;
pub const NV_ESC_RM_DUP_OBJECT: u32 = 0x34;
pub const NV_ESC_RM_SHARE: u32 = 0x35;
pub const NV_ESC_RM_CONFIG_GET_EX: u32 = 0x37;
pub const NV_ESC_RM_CONFIG_SET_EX: u32 = 0x38;
pub const NV_ESC_RM_I2C_ACCESS: u32 = 0x39;
pub const NV_ESC_RM_IDLE_CHANNELS: u32 = 0x41;
pub const NV_ESC_RM_VID_HEAP_CONTROL: u32 = 0x4A;
pub const NV_ESC_RM_ACCESS_REGISTRY: u32 = 0x4D;
pub const NV_ESC_RM_MAP_MEMORY: u32 = 0x4E;
pub const NV_ESC_RM_UNMAP_MEMORY: u32 = 0x4F;
pub const NV_ESC_RM_GET_EVENT_DATA: u32 = 0x52;
pub const NV_ESC_RM_ALLOC_CONTEXT_DMA2: u32 = 0x54;
pub const NV_ESC_RM_ADD_VBLANK_CALLBACK: u32 = 0x56;
pub const NV_ESC_RM_MAP_MEMORY_DMA: u32 = 0x57;
pub const NV_ESC_RM_UNMAP_MEMORY_DMA: u32 = 0x58;
pub const NV_ESC_RM_BIND_CONTEXT_DMA: u32 = 0x59;
pub const NV_ESC_RM_EXPORT_OBJECT_TO_FD: u32 = 0x5C;
pub const NV_ESC_RM_IMPORT_OBJECT_FROM_FD: u32 = 0x5D;
pub const NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO: u32 = 0x5E;
pub const NV_ESC_RM_LOCKLESS_DIAGNOSTIC: u32 = 0x5F;

// Source: the two headers above (names without the "NV_ESC_" prefix), sorted by number.
static ESCAPE_NAMES: &[(u32, &str)] = &[
    (NV_ESC_RM_ALLOC_MEMORY, "RM_ALLOC_MEMORY"),
    (NV_ESC_RM_ALLOC_OBJECT, "RM_ALLOC_OBJECT"),
    (NV_ESC_RM_FREE, "RM_FREE"),
    (NV_ESC_RM_CONTROL, "RM_CONTROL"),
    (NV_ESC_RM_ALLOC, "RM_ALLOC"),
    (NV_ESC_RM_CONFIG_GET, "RM_CONFIG_GET"),
    (NV_ESC_RM_CONFIG_SET, "RM_CONFIG_SET"),
    (NV_ESC_RM_DUP_OBJECT, "RM_DUP_OBJECT"),
    (NV_ESC_RM_SHARE, "RM_SHARE"),
    (NV_ESC_RM_CONFIG_GET_EX, "RM_CONFIG_GET_EX"),
    (NV_ESC_RM_CONFIG_SET_EX, "RM_CONFIG_SET_EX"),
    (NV_ESC_RM_I2C_ACCESS, "RM_I2C_ACCESS"),
    (NV_ESC_RM_IDLE_CHANNELS, "RM_IDLE_CHANNELS"),
    (NV_ESC_RM_VID_HEAP_CONTROL, "RM_VID_HEAP_CONTROL"),
    (NV_ESC_RM_ACCESS_REGISTRY, "RM_ACCESS_REGISTRY"),
    (NV_ESC_RM_MAP_MEMORY, "RM_MAP_MEMORY"),
    (NV_ESC_RM_UNMAP_MEMORY, "RM_UNMAP_MEMORY"),
    (NV_ESC_RM_GET_EVENT_DATA, "RM_GET_EVENT_DATA"),
    (NV_ESC_RM_ALLOC_CONTEXT_DMA2, "RM_ALLOC_CONTEXT_DMA2"),
    (NV_ESC_RM_ADD_VBLANK_CALLBACK, "RM_ADD_VBLANK_CALLBACK"),
    (NV_ESC_RM_MAP_MEMORY_DMA, "RM_MAP_MEMORY_DMA"),
    (NV_ESC_RM_UNMAP_MEMORY_DMA, "RM_UNMAP_MEMORY_DMA"),
    (NV_ESC_RM_BIND_CONTEXT_DMA, "RM_BIND_CONTEXT_DMA"),
    (NV_ESC_RM_EXPORT_OBJECT_TO_FD, "RM_EXPORT_OBJECT_TO_FD"),
    (NV_ESC_RM_IMPORT_OBJECT_FROM_FD, "RM_IMPORT_OBJECT_FROM_FD"),
    (NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO, "RM_UPDATE_DEVICE_MAPPING_INFO"),
    (NV_ESC_RM_LOCKLESS_DIAGNOSTIC, "RM_LOCKLESS_DIAGNOSTIC"),
    (NV_ESC_CARD_INFO, "CARD_INFO"),
    (NV_ESC_REGISTER_FD, "REGISTER_FD"),
    (NV_ESC_ALLOC_OS_EVENT, "ALLOC_OS_EVENT"),
    (NV_ESC_FREE_OS_EVENT, "FREE_OS_EVENT"),
    (NV_ESC_STATUS_CODE, "STATUS_CODE"),
    (NV_ESC_CHECK_VERSION_STR, "CHECK_VERSION_STR"),
    (NV_ESC_IOCTL_XFER_CMD, "IOCTL_XFER_CMD"),
    (NV_ESC_ATTACH_GPUS_TO_FD, "ATTACH_GPUS_TO_FD"),
    (NV_ESC_QUERY_DEVICE_INTR, "QUERY_DEVICE_INTR"),
    (NV_ESC_SYS_PARAMS, "SYS_PARAMS"),
    (NV_ESC_NUMA_INFO, "NUMA_INFO"),
    (NV_ESC_SET_NUMA_STATUS, "SET_NUMA_STATUS"),
    (NV_ESC_EXPORT_TO_DMABUF_FD, "EXPORT_TO_DMABUF_FD"),
    (NV_ESC_WAIT_OPEN_COMPLETE, "WAIT_OPEN_COMPLETE"),
];

/// The escape's name without the `NV_ESC_` prefix ("RM_CONTROL", "CARD_INFO", …).
pub fn escape_name(nr: u32) -> Option<&'static str> {
    ESCAPE_NAMES.binary_search_by_key(&nr, |&(n, _)| n).ok().map(|i| ESCAPE_NAMES[i].1)
}

/// Every escape number with its name, in number order.
pub fn escape_names() -> impl Iterator<Item = (u32, &'static str)> {
    ESCAPE_NAMES.iter().copied()
}

/// For an NV_ESC_IOCTL_XFER_CMD request, the `nv_ioctl_xfer_t` in its entry
/// bytes: `(inner escape nr, inner struct size, user pointer to the inner struct)`.
///
/// `None` unless the request is XFER with the 16-byte size the driver accepts
/// and `entry` holds the 16 bytes. The eBPF side reads these three at entry and
/// then copies `min(size, MAX_PARAM_COPY)` bytes from `ptr`, at entry and again
/// at exit; `decode` expects them appended to the 16 xfer bytes. The driver
/// rejects (-EINVAL) an inner size above `NV_ABSOLUTE_MAX_IOCTL_SIZE`.
pub fn xfer_inner(request: u64, entry: &[u8]) -> Option<(u32, u32, u64)> {
    let i = ioc(request);
    if i.nr != NV_ESC_IOCTL_XFER_CMD || i.size != NV_IOCTL_XFER_SIZE {
        return None;
    }
    let b = entry.get(..16)?;
    let cmd = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let size = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    let ptr = u64::from_le_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]);
    Some((cmd, size, ptr))
}
