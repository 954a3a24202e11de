//! Per-escape parameter-struct layouts of the frontend (/dev/nvidiactl,
//! /dev/nvidiaN): which fields sit where, and where the NV_STATUS is.
//!
//! Offsets and sizes are x86-64 and were checked by compiling the headers of
//! NVIDIA/open-gpu-kernel-modules@580.142 (and @535.288.01 for the older sizes
//! kept below) with gcc and printing `offsetof`/`sizeof`:
//! - kernel-open/common/inc/nv-ioctl.h (nv_ioctl_*_t of the Linux escapes)
//! - kernel-open/common/inc/nv-ioctl-numa.h (NUMA_INFO, SET_NUMA_STATUS)
//! - src/common/sdk/nvidia/inc/nvos.h (NVOSxx_PARAMETERS of the RM escapes)
//! - src/nvidia/arch/nvalloc/unix/include/nv-unix-nvos-params-wrappers.h (the `_with_fd` wrappers)
//!
//! and cross-checked with google/gvisor pkg/abi/nvgpu/frontend.go. Which escape
//! takes which struct: kernel-open/nvidia/nv.c (`nvidia_ioctl`),
//! src/nvidia/arch/nvalloc/unix/src/escape.c (`RmIoctl`) and osapi.c (`rm_ioctl`).

use serde_json::Value;

use super::layout::{Ctx, Dir::*, Field, Kind::*, f, hex, le32, le64};
use super::request::*;

/// One struct an escape may take, told apart by its size.
#[derive(Debug)]
pub(crate) struct Layout {
    /// `sizeof` the struct: the `_IOC_SIZE` (or XFER size) that selects it.
    pub size: u32,
    /// The C type name, for the `struct` field of the decode.
    pub strukt: &'static str,
    pub fields: &'static [Field],
    /// Offset of the NV_STATUS the driver writes back, if the struct has one.
    pub status: Option<usize>,
}

/// How an escape's parameters are decoded.
#[derive(Debug)]
pub(crate) enum Body {
    /// Fixed structs; the one whose size matches the request is used, else the first.
    Fixed(&'static [Layout]),
    /// `nv_ioctl_card_info_t[size / 72]`, filled by the driver.
    CardInfo,
    /// `NvU32 gpu_ids[size / 4]`.
    AttachGpus,
    /// `nv_ioctl_xfer_t` wrapping another escape.
    Xfer,
    /// Known escape whose parameters are not decoded.
    Opaque,
}

/// The decoding of escape `nr`.
pub(crate) fn body(nr: u32) -> Body {
    match nr {
        NV_ESC_CARD_INFO => Body::CardInfo,
        NV_ESC_ATTACH_GPUS_TO_FD => Body::AttachGpus,
        NV_ESC_IOCTL_XFER_CMD => Body::Xfer,
        _ => match layouts(nr) {
            Some(l) => Body::Fixed(l),
            None => Body::Opaque,
        },
    }
}

/// The layout for escape `nr` with a `size`-byte struct, and whether `size` matched one.
pub(crate) fn layout_for(nr: u32, size: u32) -> Option<(&'static Layout, bool)> {
    pick_layout(layouts(nr)?, size)
}

/// Of an escape's layouts, the one of `size` bytes (true), else the first (false).
pub(crate) fn pick_layout(ls: &'static [Layout], size: u32) -> Option<(&'static Layout, bool)> {
    match ls.iter().find(|l| l.size == size) {
        Some(l) => Some((l, true)),
        None => ls.first().map(|l| (l, false)),
    }
}

/// Offset of the NV_STATUS for escape `nr` with a `size`-byte struct (only when `size` matches).
pub fn escape_status_offset(nr: u32, size: u32) -> Option<usize> {
    match layout_for(nr, size) {
        Some((l, true)) => l.status,
        _ => None,
    }
}

fn layouts(nr: u32) -> Option<&'static [Layout]> {
    Some(match nr {
        NV_ESC_REGISTER_FD => REGISTER_FD,
        NV_ESC_ALLOC_OS_EVENT | NV_ESC_FREE_OS_EVENT => OS_EVENT,
        NV_ESC_STATUS_CODE => STATUS_CODE,
        NV_ESC_CHECK_VERSION_STR => CHECK_VERSION_STR,
        NV_ESC_QUERY_DEVICE_INTR => QUERY_DEVICE_INTR,
        NV_ESC_SYS_PARAMS => SYS_PARAMS,
        NV_ESC_NUMA_INFO => NUMA_INFO,
        NV_ESC_SET_NUMA_STATUS => SET_NUMA_STATUS,
        NV_ESC_EXPORT_TO_DMABUF_FD => EXPORT_TO_DMABUF_FD,
        NV_ESC_WAIT_OPEN_COMPLETE => WAIT_OPEN_COMPLETE,
        NV_ESC_RM_ALLOC_MEMORY => ALLOC_MEMORY,
        NV_ESC_RM_ALLOC_OBJECT => ALLOC_OBJECT,
        NV_ESC_RM_FREE => FREE,
        NV_ESC_RM_CONTROL => CONTROL,
        NV_ESC_RM_ALLOC => ALLOC,
        NV_ESC_RM_DUP_OBJECT => DUP_OBJECT,
        NV_ESC_RM_SHARE => SHARE,
        NV_ESC_RM_I2C_ACCESS => I2C_ACCESS,
        NV_ESC_RM_IDLE_CHANNELS => IDLE_CHANNELS,
        NV_ESC_RM_VID_HEAP_CONTROL => VID_HEAP_CONTROL,
        NV_ESC_RM_ACCESS_REGISTRY => ACCESS_REGISTRY,
        NV_ESC_RM_MAP_MEMORY => MAP_MEMORY,
        NV_ESC_RM_UNMAP_MEMORY => UNMAP_MEMORY,
        NV_ESC_RM_GET_EVENT_DATA => GET_EVENT_DATA,
        NV_ESC_RM_ALLOC_CONTEXT_DMA2 => ALLOC_CONTEXT_DMA2,
        NV_ESC_RM_MAP_MEMORY_DMA => MAP_MEMORY_DMA,
        NV_ESC_RM_UNMAP_MEMORY_DMA => UNMAP_MEMORY_DMA,
        NV_ESC_RM_BIND_CONTEXT_DMA => BIND_CONTEXT_DMA,
        NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO => UPDATE_DEVICE_MAPPING_INFO,
        _ => return None,
    })
}

// ---- Linux frontend escapes (kernel-open/common/inc/nv-ioctl.h, nv-ioctl-numa.h) ----

/// `sizeof(nv_ioctl_card_info_t)`.
pub(crate) const CARD_INFO_SIZE: usize = 72;

static REGISTER_FD: &[Layout] =
    &[Layout { size: 4, strukt: "nv_ioctl_register_fd_t", fields: &[f("ctl_fd", 0, I32, In)], status: None }];

static OS_EVENT: &[Layout] = &[Layout {
    size: 16,
    strukt: "nv_ioctl_alloc_os_event_t",
    fields: &[f("hClient", 0, Handle, In), f("hDevice", 4, Handle, In), f("fd", 8, U32, In)],
    status: Some(12),
}];

static STATUS_CODE: &[Layout] = &[Layout {
    size: 12,
    strukt: "nv_ioctl_status_code_t",
    fields: &[f("domain", 0, U32, In), f("bus", 4, U8, In), f("slot", 5, U8, In)],
    status: Some(8),
}];

static CHECK_VERSION_STR: &[Layout] = &[Layout {
    size: 72,
    strukt: "nv_ioctl_rm_api_version_t",
    fields: &[f("cmd", 0, U32, In), f("reply", 4, U32, Out), f("versionString", 8, CStr(64), InOut)],
    status: None,
}];

static QUERY_DEVICE_INTR: &[Layout] = &[Layout {
    size: 8,
    strukt: "nv_ioctl_query_device_intr",
    fields: &[f("intrStatus", 0, Hex32, Out)],
    status: Some(4),
}];

static SYS_PARAMS: &[Layout] =
    &[Layout { size: 8, strukt: "nv_ioctl_sys_params_t", fields: &[f("memblock_size", 0, U64, In)], status: None }];

// `status` here is the NUMA state (NV_IOCTL_NUMA_STATUS_*), not an NV_STATUS.
static NUMA_INFO: &[Layout] = &[Layout {
    size: 560,
    strukt: "nv_ioctl_numa_info_t",
    fields: &[
        f("nid", 0, I32, Out),
        f("numa_status", 4, I32, Out),
        f("memblock_size", 8, U64, Out),
        f("numa_mem_addr", 16, Ptr, Out),
        f("numa_mem_size", 24, U64, Out),
        f("use_auto_online", 32, Bool, Out),
        // offline_addresses @40 = { u64 addresses[64]; u32 numEntries @+512 }
        f("offline_addresses_count", 552, U32, Out),
    ],
    status: None,
}];

static SET_NUMA_STATUS: &[Layout] =
    &[Layout { size: 4, strukt: "nv_ioctl_set_numa_status_t", fields: &[f("numa_status", 0, I32, In)], status: None }];

// 580 added mappingType (and bAllowMmap in its padding): 2608 bytes; 535 has 2600.
static EXPORT_TO_DMABUF_FD: &[Layout] = &[
    Layout {
        size: 2608,
        strukt: "nv_ioctl_export_to_dma_buf_fd_t",
        fields: &[
            f("fd", 0, I32, InOut),
            f("hClient", 4, Handle, In),
            f("totalObjects", 8, U32, In),
            f("numObjects", 12, U32, In),
            f("index", 16, U32, In),
            f("totalSize", 24, U64, In),
            f("mappingType", 32, U8, In),
            f("bAllowMmap", 33, Bool, In),
        ],
        status: Some(2600),
    },
    Layout {
        size: 2600,
        strukt: "nv_ioctl_export_to_dma_buf_fd_t (535)",
        fields: &[
            f("fd", 0, I32, InOut),
            f("hClient", 4, Handle, In),
            f("totalObjects", 8, U32, In),
            f("numObjects", 12, U32, In),
            f("index", 16, U32, In),
            f("totalSize", 24, U64, In),
        ],
        status: Some(2592),
    },
];
/// Offset of `handles[128]` in the 2608- and 2600-byte export structs.
const DMABUF_HANDLES_580: usize = 36;
const DMABUF_HANDLES_535: usize = 32;
const DMABUF_MAX_HANDLES: usize = 128;

// `rc` is an errno-style open result; `adapterStatus` is the NV_STATUS.
static WAIT_OPEN_COMPLETE: &[Layout] =
    &[Layout { size: 8, strukt: "nv_ioctl_wait_open_complete_t", fields: &[f("rc", 0, I32, Out)], status: Some(4) }];

// ---- RM escapes (src/common/sdk/nvidia/inc/nvos.h) ----

static ALLOC_MEMORY: &[Layout] = &[Layout {
    size: 56,
    strukt: "nv_ioctl_nvos02_parameters_with_fd",
    fields: &[
        f("hRoot", 0, Handle, In),
        f("hObjectParent", 4, Handle, In),
        f("hObjectNew", 8, Handle, InOut),
        f("class", 12, Class, In),
        f("flags", 16, Hex32, In),
        f("pMemory", 24, Ptr, InOut),
        f("limit", 32, U64, InOut),
        f("fd", 48, I32, In),
    ],
    status: Some(40),
}];

static ALLOC_OBJECT: &[Layout] = &[Layout {
    size: 20,
    strukt: "NVOS05_PARAMETERS",
    fields: &[
        f("hRoot", 0, Handle, In),
        f("hObjectParent", 4, Handle, In),
        f("hObjectNew", 8, Handle, InOut),
        f("class", 12, Class, In),
    ],
    status: Some(16),
}];

static FREE: &[Layout] = &[Layout {
    size: 16,
    strukt: "NVOS00_PARAMETERS",
    fields: &[f("hRoot", 0, Handle, In), f("hObjectParent", 4, Handle, In), f("hObjectOld", 8, Handle, In)],
    status: Some(12),
}];

// flags: NVOS54_FLAGS_IRQL_RAISED 1, _LOCK_BYPASS 2, _FINN_SERIALIZED 4.
static CONTROL: &[Layout] = &[Layout {
    size: 32,
    strukt: "NVOS54_PARAMETERS",
    fields: &[
        f("hClient", 0, Handle, In),
        f("hObject", 4, Handle, In),
        f("cmd", 8, Cmd, In),
        f("flags", 12, Hex32, In),
        f("params", 16, Ptr, In),
        f("params_size", 24, U32, In),
    ],
    status: Some(28),
}];

// escape.c picks NVOS64 when the size is 48 (what CUDA uses), NVOS21 when 32.
// hClass is IN/OUT in effect: NV01_ROOT/_NON_PRIV/_CLIENT are rewritten to NV01_ROOT_CLIENT.
static ALLOC: &[Layout] = &[
    Layout {
        size: 48,
        strukt: "NVOS64_PARAMETERS",
        fields: &[
            f("hRoot", 0, Handle, In),
            f("hObjectParent", 4, Handle, In),
            f("hObjectNew", 8, Handle, InOut),
            f("class", 12, Class, InOut),
            f("pAllocParms", 16, Ptr, In),
            f("pRightsRequested", 24, Ptr, In),
            f("params_size", 32, U32, In),
            f("flags", 36, Hex32, In),
        ],
        status: Some(40),
    },
    Layout {
        size: 32,
        strukt: "NVOS21_PARAMETERS",
        fields: &[
            f("hRoot", 0, Handle, In),
            f("hObjectParent", 4, Handle, In),
            f("hObjectNew", 8, Handle, InOut),
            f("class", 12, Class, InOut),
            f("pAllocParms", 16, Ptr, In),
            f("params_size", 24, U32, In),
        ],
        status: Some(28),
    },
];

static DUP_OBJECT: &[Layout] = &[Layout {
    size: 28,
    strukt: "NVOS55_PARAMETERS",
    fields: &[
        f("hClient", 0, Handle, In),
        f("hParent", 4, Handle, In),
        f("hObject", 8, Handle, InOut),
        f("hClientSrc", 12, Handle, In),
        f("hObjectSrc", 16, Handle, In),
        f("flags", 20, Hex32, In),
    ],
    status: Some(24),
}];

// sharePolicy is RS_SHARE_POLICY {u32 target; RS_ACCESS_MASK accessMask; u16 type; u8 action} (rs_access.h).
static SHARE: &[Layout] = &[Layout {
    size: 24,
    strukt: "NVOS57_PARAMETERS",
    fields: &[
        f("hClient", 0, Handle, In),
        f("hObject", 4, Handle, In),
        f("target", 8, Hex32, In),
        f("accessMask", 12, Hex32, In),
        f("type", 16, U16, In),
        f("action", 18, U8, In),
    ],
    status: Some(20),
}];

static I2C_ACCESS: &[Layout] = &[Layout {
    size: 32,
    strukt: "NVOS_I2C_ACCESS_PARAMS",
    fields: &[
        f("hClient", 0, Handle, In),
        f("hDevice", 4, Handle, In),
        f("params_size", 8, U32, In),
        f("paramStructPtr", 16, Ptr, In),
    ],
    status: Some(24),
}];

static IDLE_CHANNELS: &[Layout] = &[Layout {
    size: 56,
    strukt: "NVOS30_PARAMETERS",
    fields: &[
        f("hClient", 0, Handle, In),
        f("hDevice", 4, Handle, In),
        f("hChannel", 8, Handle, In),
        f("numChannels", 12, U32, In),
        f("phClients", 16, Ptr, In),
        f("phDevices", 24, Ptr, In),
        f("phChannels", 32, Ptr, In),
        f("flags", 40, Hex32, In),
        f("timeout", 44, U32, In),
    ],
    status: Some(48),
}];

// The 144-byte union at 40 is decoded per `function` in `vid_heap_function`.
static VID_HEAP_CONTROL: &[Layout] = &[Layout {
    size: 184,
    strukt: "NVOS32_PARAMETERS",
    fields: &[
        f("hRoot", 0, Handle, In),
        f("hObjectParent", 4, Handle, In),
        f("function", 8, U32, In),
        f("hVASpace", 12, Handle, In),
        f("ivcHeapNumber", 16, I16, In),
        f("total", 24, U64, Out),
        f("free", 32, U64, Out),
    ],
    status: Some(20),
}];

static ACCESS_REGISTRY: &[Layout] = &[Layout {
    size: 72,
    strukt: "NVOS38_PARAMETERS",
    fields: &[
        f("hClient", 0, Handle, In),
        f("hObject", 4, Handle, In),
        f("AccessType", 8, U32, In),
        f("DevNodeLength", 12, U32, In),
        f("pDevNode", 16, Ptr, In),
        f("ParmStrLength", 24, U32, In),
        f("pParmStr", 32, Ptr, In),
        f("BinaryDataLength", 40, U32, InOut),
        f("pBinaryData", 48, Ptr, In),
        f("Data", 56, Hex32, InOut),
        f("Entry", 60, U32, In),
    ],
    status: Some(64),
}];

// pLinearAddress is OUT: the offset to pass to mmap() on `fd`.
static MAP_MEMORY: &[Layout] = &[Layout {
    size: 56,
    strukt: "nv_ioctl_nvos33_parameters_with_fd",
    fields: &[
        f("hClient", 0, Handle, In),
        f("hDevice", 4, Handle, In),
        f("hMemory", 8, Handle, In),
        f("offset", 16, U64, In),
        f("length", 24, U64, In),
        f("pLinearAddress", 32, Ptr, InOut),
        f("flags", 44, Hex32, In),
        f("fd", 48, I32, In),
    ],
    status: Some(40),
}];

static UNMAP_MEMORY: &[Layout] = &[Layout {
    size: 32,
    strukt: "NVOS34_PARAMETERS",
    fields: &[
        f("hClient", 0, Handle, In),
        f("hDevice", 4, Handle, In),
        f("hMemory", 8, Handle, In),
        f("pLinearAddress", 16, Ptr, In),
        f("flags", 28, Hex32, In),
    ],
    status: Some(24),
}];

static GET_EVENT_DATA: &[Layout] = &[Layout {
    size: 16,
    strukt: "NVOS41_PARAMETERS",
    fields: &[f("pEvent", 0, Ptr, In), f("MoreEvents", 8, U32, Out)],
    status: Some(12),
}];

static ALLOC_CONTEXT_DMA2: &[Layout] = &[Layout {
    size: 56,
    strukt: "NVOS39_PARAMETERS",
    fields: &[
        f("hObjectParent", 0, Handle, In),
        f("hSubDevice", 4, Handle, In),
        f("hObjectNew", 8, Handle, In),
        f("class", 12, Class, In),
        f("flags", 16, Hex32, In),
        f("selector", 20, U32, In),
        f("hMemory", 24, Handle, In),
        f("offset", 32, U64, In),
        f("limit", 40, U64, In),
    ],
    status: Some(48),
}];

// 580 added flags2 and kindOverride: 64 bytes; 535 has 56.
static MAP_MEMORY_DMA: &[Layout] = &[
    Layout {
        size: 64,
        strukt: "NVOS46_PARAMETERS",
        fields: &[
            f("hClient", 0, Handle, In),
            f("hDevice", 4, Handle, In),
            f("hDma", 8, Handle, In),
            f("hMemory", 12, Handle, In),
            f("offset", 16, U64, In),
            f("length", 24, U64, In),
            f("flags", 32, Hex32, In),
            f("flags2", 36, Hex32, In),
            f("kindOverride", 40, Hex32, In),
            f("dmaOffset", 48, Ptr, InOut),
        ],
        status: Some(56),
    },
    Layout {
        size: 56,
        strukt: "NVOS46_PARAMETERS (535)",
        fields: &[
            f("hClient", 0, Handle, In),
            f("hDevice", 4, Handle, In),
            f("hDma", 8, Handle, In),
            f("hMemory", 12, Handle, In),
            f("offset", 16, U64, In),
            f("length", 24, U64, In),
            f("flags", 32, Hex32, In),
            f("dmaOffset", 40, Ptr, InOut),
        ],
        status: Some(48),
    },
];

// 580 added size: 48 bytes; 535 has 40.
static UNMAP_MEMORY_DMA: &[Layout] = &[
    Layout {
        size: 48,
        strukt: "NVOS47_PARAMETERS",
        fields: &[
            f("hClient", 0, Handle, In),
            f("hDevice", 4, Handle, In),
            f("hDma", 8, Handle, In),
            f("hMemory", 12, Handle, In),
            f("flags", 16, Hex32, In),
            f("dmaOffset", 24, Ptr, In),
            f("size", 32, U64, In),
        ],
        status: Some(40),
    },
    Layout {
        size: 40,
        strukt: "NVOS47_PARAMETERS (535)",
        fields: &[
            f("hClient", 0, Handle, In),
            f("hDevice", 4, Handle, In),
            f("hDma", 8, Handle, In),
            f("hMemory", 12, Handle, In),
            f("flags", 16, Hex32, In),
            f("dmaOffset", 24, Ptr, In),
        ],
        status: Some(32),
    },
];

static BIND_CONTEXT_DMA: &[Layout] = &[Layout {
    size: 16,
    strukt: "NVOS49_PARAMETERS",
    fields: &[f("hClient", 0, Handle, In), f("hChannel", 4, Handle, In), f("hCtxDma", 8, Handle, In)],
    status: Some(12),
}];

static UPDATE_DEVICE_MAPPING_INFO: &[Layout] = &[Layout {
    size: 40,
    strukt: "NVOS56_PARAMETERS",
    fields: &[
        f("hClient", 0, Handle, In),
        f("hDevice", 4, Handle, In),
        f("hMemory", 8, Handle, In),
        f("pOldCpuAddress", 16, Ptr, In),
        f("pNewCpuAddress", 24, Ptr, In),
    ],
    status: Some(32),
}];

// ---- Decoding beyond the fixed fields ----

/// Decodes the parts of escape `nr` that a flat field list cannot: named enum
/// values, arrays, and the NVOS32 union.
pub(crate) fn extras(nr: u32, layout: &Layout, ctx: &mut Ctx<'_>) {
    match nr {
        NV_ESC_CHECK_VERSION_STR => {
            if let Some(cmd) = ctx.entry.u32(0) {
                ctx.set("cmd_name", version_cmd_name(cmd));
            }
        }
        NV_ESC_NUMA_INFO => {
            if let Some(s) = ctx.exit.and_then(|x| x.u32(4)) {
                ctx.set("numa_status_name", numa_status_name(s as i32));
            }
        }
        NV_ESC_SET_NUMA_STATUS => {
            if let Some(s) = ctx.entry.u32(0) {
                ctx.set("numa_status_name", numa_status_name(s as i32));
            }
        }
        NV_ESC_EXPORT_TO_DMABUF_FD => {
            let at = if layout.size == 2600 { DMABUF_HANDLES_535 } else { DMABUF_HANDLES_580 };
            let n = ctx.entry.u32(12).map_or(0, |n| (n as usize).min(DMABUF_MAX_HANDLES));
            let mut handles = Vec::with_capacity(n);
            for i in 0..n {
                match ctx.entry_u32(at + 4 * i) {
                    Some(h) => handles.push(super::layout::handle(h)),
                    None => break,
                }
            }
            ctx.set("handles", handles);
        }
        NV_ESC_RM_VID_HEAP_CONTROL => vid_heap_function(ctx),
        _ => {}
    }
}

// Source: NVIDIA/open-gpu-kernel-modules@580.142 kernel-open/common/inc/nv-ioctl.h (NV_RM_API_VERSION_CMD_*).
fn version_cmd_name(cmd: u32) -> Value {
    match cmd {
        0 => "STRICT".into(),
        0x31 => "RELAXED".into(),
        0x32 => "QUERY".into(),
        _ => Value::Null,
    }
}

// Source: NVIDIA/open-gpu-kernel-modules@580.142 kernel-open/common/inc/nv-ioctl-numa.h (NV_IOCTL_NUMA_STATUS_*).
fn numa_status_name(s: i32) -> Value {
    let names = [
        "DISABLED",
        "OFFLINE",
        "ONLINE_IN_PROGRESS",
        "ONLINE",
        "ONLINE_FAILED",
        "OFFLINE_IN_PROGRESS",
        "OFFLINE_FAILED",
    ];
    usize::try_from(s).ok().and_then(|i| names.get(i)).map_or(Value::Null, |&n| n.into())
}

// Source: NVIDIA/open-gpu-kernel-modules@580.142 src/common/sdk/nvidia/inc/nvos.h (NVOS32_FUNCTION_*).
static VID_HEAP_FUNCTIONS: &[(u32, &str)] = &[
    (2, "ALLOC_SIZE"),
    (3, "FREE"),
    (5, "INFO"),
    (6, "ALLOC_TILED_PITCH_HEIGHT"),
    (14, "ALLOC_SIZE_RANGE"),
    (15, "REACQUIRE_COMPR"),
    (16, "RELEASE_COMPR"),
    (18, "GET_MEM_ALIGNMENT"),
    (19, "HW_ALLOC"),
    (20, "HW_FREE"),
    (27, "ALLOC_OS_DESCRIPTOR"),
];

/// `NVOS32_FUNCTION_*` name of a VID_HEAP_CONTROL function.
pub fn vid_heap_function_name(function: u32) -> Option<&'static str> {
    VID_HEAP_FUNCTIONS.iter().find(|&&(n, _)| n == function).map(|&(_, s)| s)
}

// NVOS32 union members (offsets from the start of NVOS32_PARAMETERS; data @40).
static VH_ALLOC_SIZE: &[Field] = &[
    f("owner", 40, Hex32, In),
    f("hMemory", 44, Handle, InOut),
    f("type", 48, U32, In),
    f("flags", 52, Hex32, In),
    f("attr", 56, Hex32, InOut),
    f("format", 60, U32, InOut),
    f("size", 88, U64, InOut),
    f("alignment", 96, U64, In),
    f("offset", 104, U64, InOut),
    f("limit", 112, U64, Out),
    f("address", 120, Ptr, Out),
    f("rangeBegin", 128, U64, In),
    f("rangeEnd", 136, U64, In),
    f("attr2", 144, Hex32, InOut),
    f("numaNode", 152, I32, In),
];
static VH_FREE: &[Field] = &[f("owner", 40, Hex32, In), f("hMemory", 44, Handle, In), f("flags", 48, Hex32, In)];
static VH_ALLOC_OS_DESCRIPTOR: &[Field] = &[
    f("hMemory", 40, Handle, InOut),
    f("type", 44, U32, In),
    f("flags", 48, Hex32, In),
    f("attr", 52, Hex32, In),
    f("attr2", 56, Hex32, In),
    f("descriptor", 64, Ptr, In),
    f("limit", 72, U64, In),
    f("descriptorType", 80, U32, In),
];

fn vid_heap_function(ctx: &mut Ctx<'_>) {
    let Some(function) = ctx.entry.u32(8) else { return };
    ctx.set("function_name", vid_heap_function_name(function));
    match function {
        2 | 14 => ctx.apply(VH_ALLOC_SIZE),
        3 => ctx.apply(VH_FREE),
        27 => ctx.apply(VH_ALLOC_OS_DESCRIPTOR),
        _ => {}
    }
}

// ---- Variable-length escapes (nv.c) ----

/// CARD_INFO: the driver fills `size / 72` slots; lists the valid ones.
pub(crate) fn card_info(size: u32, ctx: &mut Ctx<'_>) {
    let slots = size as usize / CARD_INFO_SIZE;
    ctx.set("slots", slots);
    let Some(exit) = ctx.exit else { return };
    let mut cards = Vec::new();
    for i in 0..slots {
        let base = i * CARD_INFO_SIZE;
        let Some(b) = exit.get(base, CARD_INFO_SIZE) else {
            ctx.truncated = true;
            break;
        };
        if b[0] == 0 {
            continue;
        }
        let domain = le32(&b[4..]);
        let name_end = b[60..70].iter().position(|&c| c == 0).unwrap_or(10);
        cards.push(serde_json::json!({
            "slot": i,
            "pci": format!("{:04x}:{:02x}:{:02x}.{:x}", domain, b[8], b[9], b[10]),
            "vendor_id": format!("{:#06x}", u16::from_le_bytes([b[12], b[13]])),
            "device_id": format!("{:#06x}", u16::from_le_bytes([b[14], b[15]])),
            "gpu_id": hex(le32(&b[16..]).into()),
            "interrupt_line": u16::from_le_bytes([b[20], b[21]]),
            "reg_address": hex(le64(&b[24..])),
            "reg_size": le64(&b[32..]),
            "fb_address": hex(le64(&b[40..])),
            "fb_size": le64(&b[48..]),
            "minor_number": le32(&b[56..]),
            "dev_name": String::from_utf8_lossy(&b[60..60 + name_end]),
        }));
    }
    ctx.set("cards", cards);
}

/// ATTACH_GPUS_TO_FD: `size / 4` GPU ids (zeros are skipped by the driver).
pub(crate) fn attach_gpus(size: u32, ctx: &mut Ctx<'_>) {
    let n = size as usize / 4;
    let mut ids = Vec::new();
    for i in 0..n {
        match ctx.entry_u32(4 * i) {
            Some(0) => {}
            Some(id) => ids.push(hex(id.into())),
            None => break,
        }
    }
    ctx.set("gpu_ids", ids);
}
