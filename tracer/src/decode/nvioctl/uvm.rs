//! UVM ioctls (/dev/nvidia-uvm, /dev/nvidia-uvm-tools): number → name, the
//! parameter struct's size, where its `rmStatus` is, and its fields.
//!
//! On Linux a UVM request is the plain command number (`UVM_IOCTL_BASE(i)` is
//! `i`), not `_IOC`-encoded, so it carries no size: the kernel copies
//! `sizeof(<CMD>_PARAMS)` from the argument (`__UVM_ROUTE_CMD_*` in
//! kernel-open/nvidia-uvm/uvm_api.h), calls the handler, stores its NV_STATUS
//! in `rmStatus` and copies the whole struct back; the ioctl itself returns 0
//! unless a copy faults (-EFAULT), an allocation fails (-ENOMEM) or the PM lock
//! is busy (-EAGAIN).

use super::layout::{Dir::*, Field, Kind::*, f};

/// Which file's ioctl handler serves a command (580.142).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UvmRoute {
    /// `uvm_ioctl` (kernel-open/nvidia-uvm/uvm.c), on /dev/nvidia-uvm.
    Main,
    /// `uvm_tools_unlocked_ioctl` (kernel-open/nvidia-uvm/uvm_tools.c), on /dev/nvidia-uvm-tools.
    Tools,
    /// Defined in uvm_ioctl.h but not routed on Linux: falls through to `uvm_test_ioctl`.
    Unrouted,
}

#[derive(Debug)]
pub(crate) struct UvmIoctl {
    pub num: u32,
    pub name: &'static str,
    /// `sizeof(<name>_PARAMS)`; 0 for UVM_DEINITIALIZE, which takes none.
    pub size: usize,
    /// `offsetof(<name>_PARAMS, rmStatus)`.
    pub status: Option<usize>,
    pub route: UvmRoute,
    pub fields: &'static [Field],
}

use UvmRoute::{Main, Tools, Unrouted};

const fn u(
    num: u32,
    name: &'static str,
    size: usize,
    status: Option<usize>,
    route: UvmRoute,
    fields: &'static [Field],
) -> UvmIoctl {
    UvmIoctl { num, name, size, status, route, fields }
}

// Field lists shared by several commands.
static BASE_LENGTH: &[Field] = &[f("base", 0, Ptr, In), f("length", 8, U64, In)];
static REQUESTED_BASE_LENGTH: &[Field] = &[f("requestedBase", 0, Ptr, In), f("length", 8, U64, In)];
static BASE_LENGTH_GPU: &[Field] = &[f("base", 0, Ptr, In), f("length", 8, U64, In), f("gpuUuid", 16, Uuid, In)];
static GPU_UUID: &[Field] = &[f("gpu_uuid", 0, Uuid, In)];
static GPU_UUID_CAMEL: &[Field] = &[f("gpuUuid", 0, Uuid, In)];
static PEER: &[Field] = &[f("gpuUuidA", 0, Uuid, In), f("gpuUuidB", 16, Uuid, In)];
static RANGE_GROUP_ID: &[Field] = &[f("rangeGroupId", 0, U64, In)];
static ACCESSED_BY: &[Field] =
    &[f("requestedBase", 0, Ptr, In), f("length", 8, U64, In), f("accessedByUuid", 16, Uuid, In)];
static RANGE_GROUP_IDS: &[Field] = &[f("numGroupIds", 256, U64, In)];
static TOOLS_EVENT_TRACKER: &[Field] = &[
    f("queueBuffer", 0, Ptr, In),
    f("queueBufferSize", 8, U64, In),
    f("controlBuffer", 16, Ptr, In),
    f("processor", 24, Uuid, In),
    f("allProcessors", 40, U32, In),
    f("uvmFd", 44, U32, In),
];
static TOOLS_PROCESS_MEMORY: &[Field] =
    &[f("buffer", 0, Ptr, In), f("size", 8, U64, In), f("targetVa", 16, Ptr, In), f("bytesRead", 24, U64, Out)];
static TOOLS_UUID_TABLE: &[Field] = &[f("tablePtr", 0, Ptr, In)];
static NONE: &[Field] = &[];

/// `sizeof(UvmGpuMappingAttributes)` (uvm_types.h): gpuUuid[16], then five u32:
/// gpuMappingType, gpuCachingType, gpuFormatType, gpuElementBits, gpuCompressionType.
pub(crate) const GPU_MAPPING_ATTRIBUTES_SIZE: usize = 36;
/// Offset of `perGpuAttributes` in MAP_EXTERNAL_ALLOCATION (24) and ALLOC_SEMAPHORE_POOL (16).
pub(crate) const fn per_gpu_attributes_offset(num: u32) -> Option<usize> {
    match num {
        33 => Some(24),
        68 => Some(16),
        _ => None,
    }
}

// Source: NVIDIA/open-gpu-kernel-modules@580.142 kernel-open/nvidia-uvm/uvm_ioctl.h and
// uvm_linux_ioctl.h (numbers, field names); sizes and offsets from compiling them with gcc
// (sizeof/offsetof); routes from uvm.c `uvm_ioctl` and uvm_tools.c `uvm_tools_unlocked_ioctl`.
// Cross-checked with google/gvisor pkg/abi/nvgpu/uvm.go. Sorted by number. (21/22,
// UVM_REGION_SET_BACKING/UNSET_BACKING, are not defined on Linux; 36, UVM_DEBUG_ACCESS_MEMORY,
// was removed before 580.)
static UVM: &[UvmIoctl] = &[
    u(1, "UVM_RESERVE_VA", 24, Some(16), Unrouted, REQUESTED_BASE_LENGTH),
    u(2, "UVM_RELEASE_VA", 24, Some(16), Unrouted, REQUESTED_BASE_LENGTH),
    u(3, "UVM_REGION_COMMIT", 48, Some(40), Unrouted, NONE),
    u(4, "UVM_REGION_DECOMMIT", 24, Some(16), Unrouted, NONE),
    u(5, "UVM_REGION_SET_STREAM", 48, Some(40), Unrouted, NONE),
    u(6, "UVM_SET_STREAM_RUNNING", 16, Some(8), Unrouted, NONE),
    u(7, "UVM_SET_STREAM_STOPPED", 272, Some(264), Unrouted, NONE),
    u(9, "UVM_RUN_TEST", 44, Some(40), Unrouted, NONE),
    u(10, "UVM_ADD_SESSION", 24, Some(20), Unrouted, NONE),
    u(11, "UVM_REMOVE_SESSION", 8, Some(4), Unrouted, NONE),
    u(12, "UVM_ENABLE_COUNTERS", 908, Some(904), Unrouted, NONE),
    u(13, "UVM_MAP_COUNTER", 48, Some(40), Unrouted, NONE),
    u(14, "UVM_CREATE_EVENT_QUEUE", 32, Some(28), Unrouted, NONE),
    u(15, "UVM_REMOVE_EVENT_QUEUE", 12, Some(8), Unrouted, NONE),
    u(16, "UVM_MAP_EVENT_QUEUE", 56, Some(48), Unrouted, NONE),
    u(17, "UVM_EVENT_CTRL", 20, Some(16), Unrouted, NONE),
    u(18, "UVM_REGISTER_MPS_SERVER", 536, Some(528), Unrouted, NONE),
    u(19, "UVM_REGISTER_MPS_CLIENT", 16, Some(8), Unrouted, NONE),
    u(20, "UVM_GET_GPU_UUID_TABLE", 520, Some(516), Unrouted, NONE),
    u(23, "UVM_CREATE_RANGE_GROUP", 16, Some(8), Main, &[f("rangeGroupId", 0, U64, Out)]),
    u(24, "UVM_DESTROY_RANGE_GROUP", 16, Some(8), Main, RANGE_GROUP_ID),
    u(
        25,
        "UVM_REGISTER_GPU_VASPACE",
        32,
        Some(28),
        Main,
        &[
            f("gpuUuid", 0, Uuid, In),
            f("rmCtrlFd", 16, I32, In),
            f("hClient", 20, Handle, In),
            f("hVaSpace", 24, Handle, In),
        ],
    ),
    u(26, "UVM_UNREGISTER_GPU_VASPACE", 20, Some(16), Main, GPU_UUID_CAMEL),
    u(
        27,
        "UVM_REGISTER_CHANNEL",
        56,
        Some(48),
        Main,
        &[
            f("gpuUuid", 0, Uuid, In),
            f("rmCtrlFd", 16, I32, In),
            f("hClient", 20, Handle, In),
            f("hChannel", 24, Handle, In),
            f("base", 32, Ptr, In),
            f("length", 40, U64, In),
        ],
    ),
    u(
        28,
        "UVM_UNREGISTER_CHANNEL",
        28,
        Some(24),
        Main,
        &[f("gpuUuid", 0, Uuid, In), f("hClient", 16, Handle, In), f("hChannel", 20, Handle, In)],
    ),
    u(29, "UVM_ENABLE_PEER_ACCESS", 36, Some(32), Main, PEER),
    u(30, "UVM_DISABLE_PEER_ACCESS", 36, Some(32), Main, PEER),
    u(
        31,
        "UVM_SET_RANGE_GROUP",
        32,
        Some(24),
        Main,
        &[f("rangeGroupId", 0, U64, In), f("requestedBase", 8, Ptr, In), f("length", 16, U64, In)],
    ),
    // perGpuAttributes @24 (256 × 36 bytes) is decoded in mod.rs up to gpuAttributesCount.
    u(
        33,
        "UVM_MAP_EXTERNAL_ALLOCATION",
        9264,
        Some(9260),
        Main,
        &[
            f("base", 0, Ptr, In),
            f("length", 8, U64, In),
            f("offset", 16, U64, In),
            f("gpuAttributesCount", 9240, U64, In),
            f("rmCtrlFd", 9248, I32, In),
            f("hClient", 9252, Handle, In),
            f("hMemory", 9256, Handle, In),
        ],
    ),
    u(34, "UVM_FREE", 24, Some(16), Main, BASE_LENGTH),
    u(35, "UVM_MEM_MAP", 24, Some(16), Unrouted, &[f("regionBase", 0, Ptr, In), f("regionLength", 8, U64, In)]),
    u(
        37,
        "UVM_REGISTER_GPU",
        40,
        Some(36),
        Main,
        &[
            f("gpu_uuid", 0, Uuid, InOut),
            f("numaEnabled", 16, Bool, Out),
            f("numaNodeId", 20, I32, Out),
            f("rmCtrlFd", 24, I32, In),
            f("hClient", 28, Handle, In),
            f("hSmcPartRef", 32, Handle, In),
        ],
    ),
    u(38, "UVM_UNREGISTER_GPU", 20, Some(16), Main, GPU_UUID),
    u(39, "UVM_PAGEABLE_MEM_ACCESS", 8, Some(4), Main, &[f("pageableMemAccess", 0, Bool, Out)]),
    u(40, "UVM_PREVENT_MIGRATION_RANGE_GROUPS", 272, Some(264), Main, RANGE_GROUP_IDS),
    u(41, "UVM_ALLOW_MIGRATION_RANGE_GROUPS", 272, Some(264), Main, RANGE_GROUP_IDS),
    u(
        42,
        "UVM_SET_PREFERRED_LOCATION",
        40,
        Some(36),
        Main,
        &[
            f("requestedBase", 0, Ptr, In),
            f("length", 8, U64, In),
            f("preferredLocation", 16, Uuid, In),
            f("preferredCpuNumaNode", 32, I32, In),
        ],
    ),
    u(43, "UVM_UNSET_PREFERRED_LOCATION", 24, Some(16), Main, REQUESTED_BASE_LENGTH),
    u(44, "UVM_ENABLE_READ_DUPLICATION", 24, Some(16), Main, REQUESTED_BASE_LENGTH),
    u(45, "UVM_DISABLE_READ_DUPLICATION", 24, Some(16), Main, REQUESTED_BASE_LENGTH),
    u(46, "UVM_SET_ACCESSED_BY", 40, Some(32), Main, ACCESSED_BY),
    u(47, "UVM_UNSET_ACCESSED_BY", 40, Some(32), Main, ACCESSED_BY),
    u(
        51,
        "UVM_MIGRATE",
        80,
        Some(72),
        Main,
        &[
            f("base", 0, Ptr, In),
            f("length", 8, U64, In),
            f("destinationUuid", 16, Uuid, In),
            f("flags", 32, Hex32, In),
            f("semaphoreAddress", 40, Ptr, In),
            f("semaphorePayload", 48, U32, In),
            f("cpuNumaNode", 52, I32, In),
            f("userSpaceStart", 56, Ptr, Out),
            f("userSpaceLength", 64, U64, Out),
        ],
    ),
    u(
        53,
        "UVM_MIGRATE_RANGE_GROUP",
        32,
        Some(24),
        Main,
        &[f("rangeGroupId", 0, U64, In), f("destinationUuid", 8, Uuid, In)],
    ),
    u(54, "UVM_ENABLE_SYSTEM_WIDE_ATOMICS", 20, Some(16), Main, GPU_UUID),
    u(55, "UVM_DISABLE_SYSTEM_WIDE_ATOMICS", 20, Some(16), Main, GPU_UUID),
    u(56, "UVM_TOOLS_INIT_EVENT_TRACKER", 56, Some(48), Tools, TOOLS_EVENT_TRACKER),
    u(57, "UVM_TOOLS_SET_NOTIFICATION_THRESHOLD", 8, Some(4), Tools, &[f("notificationThreshold", 0, U32, In)]),
    u(58, "UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS", 16, Some(8), Tools, &[f("eventTypeFlags", 0, Hex64, In)]),
    u(59, "UVM_TOOLS_EVENT_QUEUE_DISABLE_EVENTS", 16, Some(8), Tools, &[f("eventTypeFlags", 0, Hex64, In)]),
    u(60, "UVM_TOOLS_ENABLE_COUNTERS", 16, Some(8), Tools, &[f("counterTypeFlags", 0, Hex64, In)]),
    u(61, "UVM_TOOLS_DISABLE_COUNTERS", 16, Some(8), Tools, &[f("counterTypeFlags", 0, Hex64, In)]),
    u(62, "UVM_TOOLS_READ_PROCESS_MEMORY", 40, Some(32), Main, TOOLS_PROCESS_MEMORY),
    u(63, "UVM_TOOLS_WRITE_PROCESS_MEMORY", 40, Some(32), Main, TOOLS_PROCESS_MEMORY),
    u(64, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE", 16, Some(8), Main, TOOLS_UUID_TABLE),
    u(65, "UVM_MAP_DYNAMIC_PARALLELISM_REGION", 40, Some(32), Main, BASE_LENGTH_GPU),
    u(66, "UVM_UNMAP_EXTERNAL", 40, Some(32), Main, BASE_LENGTH_GPU),
    u(67, "UVM_TOOLS_FLUSH_EVENTS", 4, Some(0), Main, NONE),
    // perGpuAttributes @16 (256 × 36 bytes) is decoded in mod.rs up to gpuAttributesCount.
    u(
        68,
        "UVM_ALLOC_SEMAPHORE_POOL",
        9248,
        Some(9240),
        Main,
        &[f("base", 0, Ptr, In), f("length", 8, U64, In), f("gpuAttributesCount", 9232, U64, In)],
    ),
    u(69, "UVM_CLEAN_UP_ZOMBIE_RESOURCES", 4, Some(0), Main, NONE),
    u(
        70,
        "UVM_PAGEABLE_MEM_ACCESS_ON_GPU",
        24,
        Some(20),
        Main,
        &[f("gpu_uuid", 0, Uuid, In), f("pageableMemAccess", 16, Bool, Out)],
    ),
    u(
        71,
        "UVM_POPULATE_PAGEABLE",
        24,
        Some(20),
        Main,
        &[f("base", 0, Ptr, In), f("length", 8, U64, In), f("flags", 16, Hex32, In)],
    ),
    u(72, "UVM_VALIDATE_VA_RANGE", 24, Some(16), Main, BASE_LENGTH),
    u(73, "UVM_CREATE_EXTERNAL_RANGE", 24, Some(16), Main, BASE_LENGTH),
    u(74, "UVM_MAP_EXTERNAL_SPARSE", 40, Some(32), Main, BASE_LENGTH_GPU),
    u(75, "UVM_MM_INITIALIZE", 8, Some(4), Main, &[f("uvmFd", 0, I32, In)]),
    u(76, "UVM_TOOLS_INIT_EVENT_TRACKER_V2", 56, Some(48), Tools, TOOLS_EVENT_TRACKER),
    u(77, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE_V2", 16, Some(8), Main, TOOLS_UUID_TABLE),
    u(
        78,
        "UVM_ALLOC_DEVICE_P2P",
        56,
        Some(52),
        Main,
        &[
            f("base", 0, Ptr, In),
            f("length", 8, U64, In),
            f("offset", 16, U64, In),
            f("gpuUuid", 24, Uuid, In),
            f("rmCtrlFd", 40, I32, In),
            f("hClient", 44, Handle, In),
            f("hMemory", 48, Handle, In),
        ],
    ),
    u(79, "UVM_CLEAR_ALL_ACCESS_COUNTERS", 4, Some(0), Main, NONE),
    u(
        80,
        "UVM_DISCARD",
        32,
        Some(24),
        Main,
        &[f("base", 0, Ptr, In), f("length", 8, U64, In), f("flags", 16, Hex64, In)],
    ),
    u(2047, "UVM_IS_8_SUPPORTED", 8, Some(4), Unrouted, &[f("is8Supported", 0, U32, Out)]),
    u(0x3000_0001, "UVM_INITIALIZE", 16, Some(8), Main, &[f("flags", 0, Hex64, In)]),
    u(0x3000_0002, "UVM_DEINITIALIZE", 0, None, Main, NONE),
];

pub(crate) fn lookup(request: u64) -> Option<&'static UvmIoctl> {
    let num = request as u32;
    UVM.binary_search_by_key(&num, |e| e.num).ok().map(|i| &UVM[i])
}

/// The name of UVM request `request` ("UVM_MAP_EXTERNAL_ALLOCATION", …), if known.
/// Only the low 32 bits count, as for the kernel.
pub fn uvm_name(request: u64) -> Option<&'static str> {
    lookup(request).map(|e| e.name)
}

/// `sizeof` the UVM request's parameter struct, uncapped (0 for UVM_DEINITIALIZE).
pub fn uvm_param_size(request: u64) -> Option<usize> {
    lookup(request).map(|e| e.size)
}

/// Offset of `rmStatus` in the UVM request's parameter struct.
pub fn uvm_status_offset(request: u64) -> Option<usize> {
    lookup(request).and_then(|e| e.status)
}

/// Which handler serves the UVM request on Linux.
pub fn uvm_route(request: u64) -> Option<UvmRoute> {
    lookup(request).map(|e| e.route)
}

/// Every UVM request number with its name, in number order.
pub fn uvm_ioctls() -> impl Iterator<Item = (u32, &'static str)> {
    UVM.iter().map(|e| (e.num, e.name))
}

/// Decodes the fields of UVM command `e`, and the per-GPU mapping attributes of
/// MAP_EXTERNAL_ALLOCATION / ALLOC_SEMAPHORE_POOL up to `gpuAttributesCount`.
pub(crate) fn decode_fields(e: &UvmIoctl, ctx: &mut super::layout::Ctx<'_>) {
    ctx.apply(e.fields);
    let Some(at) = per_gpu_attributes_offset(e.num) else { return };
    // gpuAttributesCount sits right after the 256-entry array.
    let Some(count) = ctx.entry.u64(at + 256 * GPU_MAPPING_ATTRIBUTES_SIZE) else { return };
    let mut gpus = Vec::new();
    for i in 0..count.min(256) as usize {
        let Some(b) = ctx.entry_bytes(at + i * GPU_MAPPING_ATTRIBUTES_SIZE, GPU_MAPPING_ATTRIBUTES_SIZE) else {
            break;
        };
        let le = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        gpus.push(serde_json::json!({
            "gpuUuid": super::layout::uuid(&b[..16]),
            "gpuMappingType": le(16),
            "gpuCachingType": le(20),
            "gpuFormatType": le(24),
            "gpuElementBits": le(28),
            "gpuCompressionType": le(32),
        }));
    }
    ctx.set("perGpuAttributes", gpus);
}

/// For a UVM struct larger than `cap`, the window `(offset, len)` that holds its
/// fields past the cap (and `rmStatus`), for a second, small copy.
pub(crate) fn tail_window(e: &UvmIoctl, cap: usize) -> Option<(usize, usize)> {
    if e.size <= cap {
        return None;
    }
    let start = e.fields.iter().map(|f| f.off).chain(e.status).filter(|&o| o >= cap).min()?;
    Some((start, e.size - start))
}
