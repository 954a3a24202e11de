//! Tests of the decoder on hand-built parameter bytes (no GPU, no root).

use proptest::prelude::*;
use serde_json::{Value, json};

use super::escapes::{Body, body};
use super::request::*;
use super::*;

/// A little-endian parameter buffer built field by field.
#[derive(Clone)]
struct B(Vec<u8>);

impl B {
    fn new(len: usize) -> Self {
        B(vec![0; len])
    }
    fn put(mut self, off: usize, bytes: &[u8]) -> Self {
        self.0[off..off + bytes.len()].copy_from_slice(bytes);
        self
    }
    fn u8(self, off: usize, v: u8) -> Self {
        self.put(off, &[v])
    }
    fn u16(self, off: usize, v: u16) -> Self {
        self.put(off, &v.to_le_bytes())
    }
    fn u32(self, off: usize, v: u32) -> Self {
        self.put(off, &v.to_le_bytes())
    }
    fn i32(self, off: usize, v: i32) -> Self {
        self.put(off, &v.to_le_bytes())
    }
    fn u64(self, off: usize, v: u64) -> Self {
        self.put(off, &v.to_le_bytes())
    }
}

fn req(nr: u32, size: u32) -> u64 {
    nv_request(nr, size)
}

/// Decodes a frontend ioctl on /dev/nvidiactl with entry and exit bytes.
fn ctl(nr: u32, entry: &B, exit: &B) -> Decoded {
    decode(Device::Ctl, req(nr, entry.0.len() as u32), &entry.0, Some(&exit.0), Some(0))
}

fn field<'a>(d: &'a Decoded, key: &str) -> &'a Value {
    d.fields.get(key).unwrap_or_else(|| panic!("no field {key} in {}", d.to_json()))
}

const UUID: [u8; 16] = [0x9a, 0x3b, 0x1c, 0x2d, 0x4e, 0x5f, 0x60, 0x71, 0x82, 0x93, 0xa4, 0xb5, 0xc6, 0xd7, 0xe8, 0xf9];
const UUID_STR: &str = "9a3b1c2d-4e5f-6071-8293-a4b5c6d7e8f9";

// ---------- request numbers and devices ----------

#[test]
fn ioc_fields_of_observed_requests() {
    // Requests seen from CUDA 13 on 580.159.04 (shared/reference/nvidia-ioctl.md §6).
    let seen: &[(u64, u32, u32, &str)] = &[
        (0xc020462a, 0x2a, 32, "RM_CONTROL"),
        (0xc030462b, 0x2b, 48, "RM_ALLOC"),
        (0xc038464e, 0x4e, 56, "RM_MAP_MEMORY"),
        (0xc0384627, 0x27, 56, "RM_ALLOC_MEMORY"),
        (0xc0104629, 0x29, 16, "RM_FREE"),
        (0xc028465e, 0x5e, 40, "RM_UPDATE_DEVICE_MAPPING_INFO"),
        (0xc00846d6, 0xd6, 8, "SYS_PARAMS"),
        (0xc00446c9, 0xc9, 4, "REGISTER_FD"),
        (0xc04846d2, 0xd2, 72, "CHECK_VERSION_STR"),
        (0xc23046d7, 0xd7, 560, "NUMA_INFO"),
        (0xc90046c8, 0xc8, 2304, "CARD_INFO"),
        (0xc01046ce, 0xce, 16, "ALLOC_OS_EVENT"),
        (0xc00846da, 0xda, 8, "WAIT_OPEN_COMPLETE"),
    ];
    for &(r, nr, size, name) in seen {
        let i = ioc(r);
        assert_eq!((i.dir, i.ty, i.nr, i.size), (3, 0x46, nr, size), "{r:#x}");
        assert_eq!(nv_request(nr, size), r);
        assert_eq!(escape_name(nr), Some(name));
        assert_eq!(param_size(Device::Ctl, r), size as usize);
        let d = decode(Device::Ctl, r, &vec![0; size as usize], Some(&vec![0; size as usize]), Some(0));
        assert_eq!(d.escape, Some(name));
        assert!(d.known && !d.truncated, "{}", d.to_json());
    }
    // Only the low 32 bits reach the driver.
    assert_eq!(ioc(0xffff_ffff_0000_0000 | 0xc020462a), ioc(0xc020462a));
}

#[test]
fn escape_numbers_match_the_headers() {
    let expected: &[(u32, &str)] = &[
        (200, "CARD_INFO"),
        (201, "REGISTER_FD"),
        (206, "ALLOC_OS_EVENT"),
        (207, "FREE_OS_EVENT"),
        (209, "STATUS_CODE"),
        (210, "CHECK_VERSION_STR"),
        (211, "IOCTL_XFER_CMD"),
        (212, "ATTACH_GPUS_TO_FD"),
        (213, "QUERY_DEVICE_INTR"),
        (214, "SYS_PARAMS"),
        (215, "NUMA_INFO"),
        (216, "SET_NUMA_STATUS"),
        (217, "EXPORT_TO_DMABUF_FD"),
        (218, "WAIT_OPEN_COMPLETE"),
        (0x27, "RM_ALLOC_MEMORY"),
        (0x29, "RM_FREE"),
        (0x2a, "RM_CONTROL"),
        (0x2b, "RM_ALLOC"),
        (0x34, "RM_DUP_OBJECT"),
        (0x4a, "RM_VID_HEAP_CONTROL"),
        (0x4e, "RM_MAP_MEMORY"),
        (0x4f, "RM_UNMAP_MEMORY"),
        (0x57, "RM_MAP_MEMORY_DMA"),
        (0x58, "RM_UNMAP_MEMORY_DMA"),
        (0x5e, "RM_UPDATE_DEVICE_MAPPING_INFO"),
    ];
    for &(nr, name) in expected {
        assert_eq!(escape_name(nr), Some(name), "{nr:#x}");
    }
    for nr in [0, 0x26, 0x30, 0x60, 199, 202, 219, 255] {
        assert_eq!(escape_name(nr), None, "{nr:#x}");
    }
    let nrs: Vec<u32> = escape_names().map(|(n, _)| n).collect();
    assert!(nrs.windows(2).all(|w| w[0] < w[1]), "escape table must be sorted");
}

#[test]
fn devices_from_paths() {
    assert_eq!(device_from_path("/dev/nvidiactl"), Device::Ctl);
    assert_eq!(device_from_path("/dev/nvidia0"), Device::Gpu(0));
    assert_eq!(device_from_path("/dev/nvidia7"), Device::Gpu(7));
    assert_eq!(device_from_path("/dev/nvidia247"), Device::Gpu(247));
    assert_eq!(device_from_path("/dev/nvidia-uvm"), Device::Uvm);
    assert_eq!(device_from_path("/dev/nvidia-uvm-tools"), Device::UvmTools);
    for other in [
        "/dev/nvidia-modeset",
        "/dev/nvidia-caps/nvidia-cap1",
        "/dev/nvidia",
        "/dev/nvidia0x",
        "/dev/nvidia99999999999",
        "nvidiactl",
        "/dev/null",
        "",
    ] {
        assert_eq!(device_from_path(other), Device::Other, "{other}");
    }
    assert_eq!(Device::Gpu(3).label(), "nvidia3");
}

#[test]
fn param_sizes_and_tails() {
    assert_eq!(param_size(Device::Ctl, req(0x2a, 32)), 32);
    assert_eq!(param_size(Device::Gpu(0), req(0x27, 56)), 56);
    assert_eq!(param_size(Device::Gpu(0), req(0xd9, 2608)), 2608);
    assert_eq!(param_size(Device::Ctl, req(0xd3, 16)), 16);
    assert_eq!(param_size(Device::Ctl, req(0x2a, 0x3fff)), MAX_PARAM_COPY);
    assert_eq!(param_size(Device::Other, req(0x2a, 32)), 0);
    let uvm: &[(u64, usize)] = &[
        (0x3000_0001, 16),
        (0x3000_0002, 0),
        (23, 16),
        (25, 32),
        (27, 56),
        (33, 4096),
        (34, 24),
        (37, 40),
        (39, 8),
        (68, 4096),
        (72, 24),
        (73, 24),
        (75, 8),
        (9999, 0),
    ];
    for &(r, n) in uvm {
        assert_eq!(param_size(Device::Uvm, r), n, "{r}");
    }
    assert_eq!(uvm_param_size(33), Some(9264));
    assert_eq!(uvm_param_size(68), Some(9248));
    assert_eq!(param_tail(Device::Uvm, 33), Some((9240, 24)));
    assert_eq!(param_tail(Device::Uvm, 68), Some((9232, 16)));
    assert_eq!(param_tail(Device::Uvm, 37), None);
    assert_eq!(param_tail(Device::Ctl, req(0x2a, 32)), None);
    assert_eq!(xfer_copy_len(100), 100);
    assert_eq!(xfer_copy_len(16384), MAX_PARAM_COPY);
}

#[test]
fn status_offsets() {
    let frontend: &[(u32, u32, Option<usize>)] = &[
        (0x2a, 32, Some(28)),
        (0x2b, 48, Some(40)),
        (0x2b, 32, Some(28)),
        (0x2b, 40, None),
        (0x29, 16, Some(12)),
        (0x27, 56, Some(40)),
        (0x4e, 56, Some(40)),
        (0x4f, 32, Some(24)),
        (0x34, 28, Some(24)),
        (0x5e, 40, Some(32)),
        (0x4a, 184, Some(20)),
        (0x57, 64, Some(56)),
        (0x57, 56, Some(48)),
        (0x58, 48, Some(40)),
        (0x58, 40, Some(32)),
        (0xce, 16, Some(12)),
        (0xd9, 2608, Some(2600)),
        (0xd9, 2600, Some(2592)),
        (0xda, 8, Some(4)),
        (0xd6, 8, None),
        (0xc8, 2304, None),
    ];
    for &(nr, size, off) in frontend {
        assert_eq!(status_offset(Device::Ctl, req(nr, size)), off, "{nr:#x}/{size}");
    }
    assert_eq!(status_offset(Device::Ctl, req(0xd3, 16)), None);
    assert_eq!(status_offset(Device::Uvm, 33), Some(9260));
    assert_eq!(status_offset(Device::Uvm, 68), Some(9240));
    assert_eq!(status_offset(Device::Uvm, 37), Some(36));
    assert_eq!(status_offset(Device::Uvm, 0x3000_0002), None);
}

/// Every field and status of every layout lies inside its struct.
#[test]
fn layouts_fit_their_structs() {
    for (nr, name) in escape_names() {
        if let Body::Fixed(ls) = body(nr) {
            for l in ls {
                for fld in l.fields {
                    assert!(fld.off + fld.kind.len() <= l.size as usize, "{name} {} {}", l.strukt, fld.key);
                }
                if let Some(s) = l.status {
                    assert!(s + 4 <= l.size as usize, "{name} status");
                }
                // A zeroed struct of the exact size decodes completely.
                let z = vec![0u8; l.size as usize];
                let d = decode(Device::Ctl, req(nr, l.size), &z, Some(&z), Some(0));
                assert!(!d.truncated, "{name} {}", d.to_json());
                assert_eq!(d.nv_status, l.status.map(|_| 0), "{name}");
                assert_eq!(field(&d, "struct"), l.strukt);
            }
        }
    }
    for (num, name) in uvm_ioctls() {
        let e = super::uvm::lookup(num.into()).unwrap();
        for fld in e.fields {
            assert!(fld.off + fld.kind.len() <= e.size, "{name} {}", fld.key);
        }
        if let Some(s) = e.status {
            assert!(s + 4 <= e.size, "{name} status");
        }
    }
}

// ---------- RM escapes ----------

#[test]
fn rm_control() {
    let entry = B::new(32)
        .u32(0, 0xc1d0_0001)
        .u32(4, 0x5c00_0003)
        .u32(8, 0x2080_0102)
        .u32(12, 0)
        .u64(16, 0x7ffd_1234_5000)
        .u32(24, 0x88c)
        .u32(28, 0);
    let exit = entry.clone().u32(28, 0);
    let d = ctl(0x2a, &entry, &exit);
    assert_eq!(d.escape, Some("RM_CONTROL"));
    assert_eq!((d.nr, d.size, d.known, d.truncated), (0x2a, 32, true, false));
    assert_eq!(field(&d, "hClient"), "0xc1d00001");
    assert_eq!(field(&d, "hObject"), "0x5c000003");
    assert_eq!(field(&d, "cmd"), "0x20800102");
    assert_eq!(field(&d, "cmd_name"), "NV2080_CTRL_CMD_GPU_GET_INFO_V2");
    assert_eq!(field(&d, "ctrl_class"), "NV2080");
    assert_eq!(field(&d, "ctrl_class_name"), "NV20_SUBDEVICE_0");
    assert_eq!(field(&d, "ctrl_category"), "0x01");
    assert_eq!(field(&d, "ctrl_category_name"), "GPU");
    assert_eq!(field(&d, "ctrl_interface"), "NV20_SUBDEVICE_0_GPU");
    assert_eq!(field(&d, "flags"), "0x0");
    assert_eq!(field(&d, "params"), "0x7ffd12345000");
    assert_eq!(field(&d, "params_size"), 0x88c);
    assert_eq!((d.nv_status, d.nv_status_name), (Some(0), Some("NV_OK")));
    assert!(!d.fields.contains_key("status_from"));

    // The RM result is in the struct; the ioctl itself returns 0.
    let failed = ctl(0x2a, &entry, &entry.clone().u32(28, 0x56));
    assert_eq!((failed.nv_status, failed.nv_status_name), (Some(0x56), Some("NV_ERR_NOT_SUPPORTED")));
    assert_eq!(failed.errno, None);
    assert_eq!(failed.to_json()["nv_status"], "0x56");
}

#[test]
fn rm_control_unknown_command_keeps_its_route() {
    let entry = B::new(32).u32(8, 0x2080_12ee);
    let d = ctl(0x2a, &entry, &entry);
    assert!(d.known);
    assert_eq!(field(&d, "cmd"), "0x208012ee");
    assert_eq!(field(&d, "cmd_name"), &Value::Null);
    assert_eq!(field(&d, "ctrl_class"), "NV2080");
    assert_eq!(field(&d, "ctrl_category_name"), "GR");

    let r = control_route(0xa06c_0101);
    assert_eq!((r.class, r.class_prefix.as_str(), r.class_name), (0xa06c, "NVA06C", Some("KEPLER_CHANNEL_GROUP_A")));
    assert_eq!((r.category, r.index, r.category_name), (1, 1, Some("GPFIFO")));
    let r = control_route(0x0000_0d04);
    assert_eq!(
        (r.class_prefix.as_str(), r.class_name, r.interface),
        ("NV0000", Some("NV01_ROOT"), Some("NV01_ROOT_CLIENT"))
    );
    let r = control_route(0x2080_8101);
    assert_eq!((r.category, r.legacy_flags, r.category_name), (1, 0x80, Some("GPU")));
    let r = control_route(0xbeef_0101);
    assert_eq!((r.class_prefix.as_str(), r.class_name, r.interface), ("NVBEEF", None, None));
}

#[test]
fn rm_alloc_nvos64_new_handle_from_exit() {
    let entry = B::new(48)
        .u32(0, 0xc1d0_0001)
        .u32(4, 0xcaf0_0010)
        .u32(8, 0)
        .u32(12, 0xc86f)
        .u64(16, 0x7ffd_0000_1000)
        .u64(24, 0)
        .u32(32, 0x58)
        .u32(36, 1);
    let exit = entry.clone().u32(8, 0xcaf0_0011).u32(40, 0);
    let d = ctl(0x2b, &entry, &exit);
    assert_eq!(d.escape, Some("RM_ALLOC"));
    assert_eq!(field(&d, "struct"), "NVOS64_PARAMETERS");
    assert_eq!(field(&d, "hRoot"), "0xc1d00001");
    assert_eq!(field(&d, "hObjectParent"), "0xcaf00010");
    assert_eq!(field(&d, "hObjectNew"), "0xcaf00011");
    assert_eq!(field(&d, "hObjectNew_in"), "0x00000000");
    assert_eq!(field(&d, "class"), "0xc86f");
    assert_eq!(field(&d, "class_name"), "HOPPER_CHANNEL_GPFIFO_A");
    assert_eq!(field(&d, "pAllocParms"), "0x7ffd00001000");
    assert_eq!(field(&d, "params_size"), 0x58);
    assert_eq!(field(&d, "flags"), "0x1");
    assert_eq!(d.nv_status_name, Some("NV_OK"));

    let busy = ctl(0x2b, &entry, &entry.clone().u32(40, 0x1a));
    assert_eq!(busy.nv_status_name, Some("NV_ERR_INSUFFICIENT_RESOURCES"));
    assert_eq!(field(&busy, "hObjectNew"), "0x00000000");
    assert!(!busy.fields.contains_key("hObjectNew_in"));
}

#[test]
fn rm_alloc_nvos21_and_root_client_rewrite() {
    // NVOS21 (32 bytes): a root client alloc; escape.c rewrites hClass 0 to 0x41
    // and RM returns the new client handle in hObjectNew.
    let entry = B::new(32).u32(12, 0).u64(16, 0x1000).u32(24, 0);
    let exit = entry.clone().u32(8, 0xc1d0_004f).u32(12, 0x41).u32(28, 0);
    let d = ctl(0x2b, &entry, &exit);
    assert_eq!(field(&d, "struct"), "NVOS21_PARAMETERS");
    assert_eq!(field(&d, "class"), "0x0041");
    assert_eq!(field(&d, "class_name"), "NV01_ROOT_CLIENT");
    assert_eq!(field(&d, "class_in"), "0x0000");
    assert_eq!(field(&d, "hObjectNew"), "0xc1d0004f");
    assert_eq!(d.nv_status, Some(0));

    // Unknown class: kept raw, null name.
    let odd = B::new(48).u32(12, 0xbeef);
    let d = ctl(0x2b, &odd, &odd);
    assert_eq!(field(&d, "class"), "0xbeef");
    assert_eq!(field(&d, "class_name"), &Value::Null);

    // A size that fits neither struct: decoded as NVOS64, flagged.
    let d = decode(Device::Ctl, req(0x2b, 40), &[0; 40], None, Some(-22));
    assert_eq!(field(&d, "size_mismatch"), true);
    assert_eq!(field(&d, "expected_size"), 48);
    assert_eq!(d.errno, Some(22));
}

#[test]
fn rm_free() {
    let entry = B::new(16).u32(0, 0xc1d0_0001).u32(4, 0xc1d0_0001).u32(8, 0xcaf0_0020);
    let d = ctl(0x29, &entry, &entry.clone().u32(12, 0x33));
    assert_eq!(d.escape, Some("RM_FREE"));
    assert_eq!(field(&d, "hRoot"), "0xc1d00001");
    assert_eq!(field(&d, "hObjectParent"), "0xc1d00001");
    assert_eq!(field(&d, "hObjectOld"), "0xcaf00020");
    assert_eq!(d.nv_status_name, Some("NV_ERR_INVALID_OBJECT_HANDLE"));
}

#[test]
fn rm_alloc_memory_nvos02_with_fd() {
    let entry = B::new(56)
        .u32(0, 0xc1d0_0001)
        .u32(4, 0xcaf0_0001)
        .u32(8, 0xcaf0_0030)
        .u32(12, 0x3e)
        .u32(16, 0xc000_0000)
        .u64(24, 0)
        .u64(32, 0x1f_ffff)
        .i32(48, 7);
    let exit = entry.clone().u64(24, 0x7f00_dead_0000).u32(40, 0);
    let d = decode(Device::Gpu(0), req(0x27, 56), &entry.0, Some(&exit.0), Some(0));
    assert_eq!(d.escape, Some("RM_ALLOC_MEMORY"));
    assert_eq!(field(&d, "class_name"), "NV01_MEMORY_SYSTEM");
    assert_eq!(field(&d, "hObjectNew"), "0xcaf00030");
    assert_eq!(field(&d, "flags"), "0xc0000000");
    assert_eq!(field(&d, "pMemory"), "0x7f00dead0000");
    assert_eq!(field(&d, "pMemory_in"), "0x0");
    assert_eq!(field(&d, "limit"), 0x1f_ffff);
    assert_eq!(field(&d, "fd"), 7);
    assert_eq!(d.nv_status, Some(0));
}

#[test]
fn rm_alloc_object_nvos05() {
    let entry = B::new(20).u32(0, 1).u32(4, 2).u32(8, 3).u32(12, 0x9067);
    let d = ctl(0x28, &entry, &entry.clone().u32(16, 0x22));
    assert_eq!(field(&d, "class_name"), "FERMI_CONTEXT_SHARE_A");
    assert_eq!(d.nv_status_name, Some("NV_ERR_INVALID_CLASS"));
}

#[test]
fn rm_map_and_unmap_memory() {
    let entry = B::new(56)
        .u32(0, 0xc1d0_0001)
        .u32(4, 0xcaf0_0002)
        .u32(8, 0xcaf0_0040)
        .u64(16, 0)
        .u64(24, 0x20_0000)
        .u32(44, 0x2)
        .i32(48, 9);
    let exit = entry.clone().u64(32, 0x1_0000_0000).u32(40, 0);
    let d = ctl(0x4e, &entry, &exit);
    assert_eq!(d.escape, Some("RM_MAP_MEMORY"));
    assert_eq!(field(&d, "hMemory"), "0xcaf00040");
    assert_eq!(field(&d, "length"), 0x20_0000);
    assert_eq!(field(&d, "pLinearAddress"), "0x100000000");
    assert_eq!(field(&d, "flags"), "0x2");
    assert_eq!(field(&d, "fd"), 9);
    assert_eq!(d.nv_status, Some(0));

    let entry = B::new(32).u32(0, 0xc1d0_0001).u32(4, 0xcaf0_0002).u32(8, 0xcaf0_0040).u64(16, 0x7f12_3400_0000);
    let d = ctl(0x4f, &entry, &entry.clone().u32(24, 0x1f));
    assert_eq!(d.escape, Some("RM_UNMAP_MEMORY"));
    assert_eq!(field(&d, "pLinearAddress"), "0x7f1234000000");
    assert_eq!(d.nv_status_name, Some("NV_ERR_INVALID_ARGUMENT"));
}

#[test]
fn rm_dup_object() {
    let entry = B::new(28).u32(0, 0xc1d0_0002).u32(4, 0xc1d0_0002).u32(8, 0).u32(12, 0xc1d0_0001).u32(16, 0xcaf0_0050);
    let d = ctl(0x34, &entry, &entry.clone().u32(8, 0xcaf0_0099).u32(24, 0));
    assert_eq!(d.escape, Some("RM_DUP_OBJECT"));
    assert_eq!(field(&d, "hObject"), "0xcaf00099");
    assert_eq!(field(&d, "hClientSrc"), "0xc1d00001");
    assert_eq!(field(&d, "hObjectSrc"), "0xcaf00050");
    assert_eq!(d.nv_status, Some(0));
}

#[test]
fn rm_share() {
    let entry = B::new(24).u32(0, 0xc1d0_0001).u32(4, 0xcaf0_0001).u32(8, 0x1234).u32(12, 0x7).u16(16, 2).u8(18, 1);
    let d = ctl(0x35, &entry, &entry.clone().u32(20, 0x1b));
    assert_eq!(field(&d, "target"), "0x1234");
    assert_eq!(field(&d, "accessMask"), "0x7");
    assert_eq!(field(&d, "type"), 2);
    assert_eq!(field(&d, "action"), 1);
    assert_eq!(d.nv_status_name, Some("NV_ERR_INSUFFICIENT_PERMISSIONS"));
}

#[test]
fn rm_vid_heap_control_alloc_size_and_free() {
    let entry = B::new(184)
        .u32(0, 0xc1d0_0001)
        .u32(4, 0xcaf0_0001)
        .u32(8, 2)
        .u32(40, 0x6d6f_6f6d)
        .u32(44, 0)
        .u32(48, 0)
        .u32(52, 0x4000)
        .u64(88, 0x10_0000)
        .u64(96, 0x1000);
    let exit = entry
        .clone()
        .u32(44, 0xcaf0_0060)
        .u64(88, 0x20_0000)
        .u64(104, 0x4_0000_0000)
        .u64(112, 0x4_001f_ffff)
        .u64(24, 80 << 30)
        .u64(32, 70 << 30)
        .u32(20, 0);
    let d = ctl(0x4a, &entry, &exit);
    assert_eq!(d.escape, Some("RM_VID_HEAP_CONTROL"));
    assert_eq!(field(&d, "function"), 2);
    assert_eq!(field(&d, "function_name"), "ALLOC_SIZE");
    assert_eq!(field(&d, "owner"), "0x6d6f6f6d");
    assert_eq!(field(&d, "hMemory"), "0xcaf00060");
    assert_eq!(field(&d, "size"), 0x20_0000);
    assert_eq!(field(&d, "size_in"), 0x10_0000);
    assert_eq!(field(&d, "alignment"), 0x1000);
    assert_eq!(field(&d, "offset"), 0x4_0000_0000u64);
    assert_eq!(field(&d, "limit"), 0x4_001f_ffffu64);
    assert_eq!(field(&d, "total"), 80u64 << 30);
    assert_eq!(field(&d, "free"), 70u64 << 30);
    assert_eq!(d.nv_status, Some(0));

    let free = B::new(184).u32(8, 3).u32(40, 1).u32(44, 0xcaf0_0060).u32(48, 1);
    let d = ctl(0x4a, &free, &free.clone().u32(20, 0x51));
    assert_eq!(field(&d, "function_name"), "FREE");
    assert_eq!(field(&d, "hMemory"), "0xcaf00060");
    assert_eq!(d.nv_status_name, Some("NV_ERR_NO_MEMORY"));
    assert_eq!(vid_heap_function_name(27), Some("ALLOC_OS_DESCRIPTOR"));
    assert_eq!(vid_heap_function_name(99), None);
}

#[test]
fn rm_map_memory_dma_both_sizes() {
    // 580: 64 bytes, status @56.
    let entry = B::new(64)
        .u32(0, 1)
        .u32(4, 2)
        .u32(8, 3)
        .u32(12, 4)
        .u64(16, 0x1000)
        .u64(24, 0x2000)
        .u32(32, 0x10)
        .u32(36, 0x20)
        .u32(40, 0xfe);
    let d = ctl(0x57, &entry, &entry.clone().u64(48, 0x7_0000_0000).u32(56, 0));
    assert_eq!(field(&d, "struct"), "NVOS46_PARAMETERS");
    assert_eq!(field(&d, "hDma"), "0x00000003");
    assert_eq!(field(&d, "flags2"), "0x20");
    assert_eq!(field(&d, "kindOverride"), "0xfe");
    assert_eq!(field(&d, "dmaOffset"), "0x700000000");
    assert_eq!(d.nv_status, Some(0));
    // 535: 56 bytes, status @48.
    let old = B::new(56).u32(32, 0x10).u64(40, 0x8000);
    let d = ctl(0x57, &old, &old.clone().u32(48, 0x57));
    assert_eq!(field(&d, "struct"), "NVOS46_PARAMETERS (535)");
    assert_eq!(field(&d, "dmaOffset"), "0x8000");
    assert_eq!(d.nv_status_name, Some("NV_ERR_OBJECT_NOT_FOUND"));

    let entry = B::new(48).u32(12, 0x44).u32(16, 1).u64(24, 0x7_0000_0000).u64(32, 0x1000);
    let d = ctl(0x58, &entry, &entry.clone().u32(40, 0));
    assert_eq!(field(&d, "struct"), "NVOS47_PARAMETERS");
    assert_eq!(field(&d, "size"), 0x1000);
    assert_eq!(d.nv_status, Some(0));
    let old = B::new(40).u64(24, 0x9000);
    let d = ctl(0x58, &old, &old.clone().u32(32, 0x1f));
    assert_eq!(field(&d, "struct"), "NVOS47_PARAMETERS (535)");
    assert_eq!(d.nv_status_name, Some("NV_ERR_INVALID_ARGUMENT"));
}

#[test]
fn rm_update_device_mapping_info() {
    let entry = B::new(40).u32(0, 1).u32(4, 2).u32(8, 3).u64(16, 0x7f00_0000_0000).u64(24, 0x7f11_0000_0000);
    let d = ctl(0x5e, &entry, &entry.clone().u32(32, 0));
    assert_eq!(d.escape, Some("RM_UPDATE_DEVICE_MAPPING_INFO"));
    assert_eq!(field(&d, "pOldCpuAddress"), "0x7f0000000000");
    assert_eq!(field(&d, "pNewCpuAddress"), "0x7f1100000000");
    assert_eq!(d.nv_status, Some(0));
}

#[test]
fn rm_other_escapes() {
    // I2C_ACCESS
    let e = B::new(32).u32(0, 1).u32(4, 2).u32(8, 0x40).u64(16, 0x5000);
    let d = ctl(0x39, &e, &e.clone().u32(24, 0x56));
    assert_eq!(field(&d, "params_size"), 0x40);
    assert_eq!(field(&d, "paramStructPtr"), "0x5000");
    assert_eq!(d.nv_status_name, Some("NV_ERR_NOT_SUPPORTED"));
    // IDLE_CHANNELS
    let e = B::new(56).u32(12, 3).u64(32, 0x6000).u32(44, 100);
    let d = ctl(0x41, &e, &e.clone().u32(48, 0x65));
    assert_eq!(field(&d, "numChannels"), 3);
    assert_eq!(field(&d, "phChannels"), "0x6000");
    assert_eq!(field(&d, "timeout"), 100);
    assert_eq!(d.nv_status_name, Some("NV_ERR_TIMEOUT"));
    // ACCESS_REGISTRY
    let e = B::new(72).u32(8, 1).u32(24, 12).u64(32, 0x7000).u32(60, 5);
    let d = ctl(0x4d, &e, &e.clone().u32(56, 0xabc).u32(64, 0));
    assert_eq!(field(&d, "AccessType"), 1);
    assert_eq!(field(&d, "ParmStrLength"), 12);
    assert_eq!(field(&d, "pParmStr"), "0x7000");
    assert_eq!(field(&d, "Data"), "0xabc");
    assert_eq!(d.nv_status, Some(0));
    // GET_EVENT_DATA
    let e = B::new(16).u64(0, 0x8000);
    let d = ctl(0x52, &e, &e.clone().u32(8, 1).u32(12, 0));
    assert_eq!(field(&d, "pEvent"), "0x8000");
    assert_eq!(field(&d, "MoreEvents"), 1);
    // ALLOC_CONTEXT_DMA2
    let e = B::new(56).u32(8, 0xcaf0_0070).u32(12, 0x2).u32(24, 0xcaf0_0040).u64(40, 0xfff);
    let d = ctl(0x54, &e, &e.clone().u32(48, 0));
    assert_eq!(field(&d, "class_name"), "NV01_CONTEXT_DMA");
    assert_eq!(field(&d, "hMemory"), "0xcaf00040");
    assert_eq!(field(&d, "limit"), 0xfff);
    // BIND_CONTEXT_DMA
    let e = B::new(16).u32(0, 1).u32(4, 2).u32(8, 3);
    let d = ctl(0x59, &e, &e.clone().u32(12, 0));
    assert_eq!(field(&d, "hCtxDma"), "0x00000003");
    assert_eq!(d.nv_status, Some(0));
    // Known escapes without a decoded layout.
    for nr in [0x32, 0x33, 0x37, 0x38, 0x56, 0x5c, 0x5d, 0x5f] {
        let d = decode(Device::Ctl, req(nr, 24), &[0; 24], Some(&[0; 24]), Some(0));
        assert!(d.known && d.escape.is_some() && d.nv_status.is_none(), "{nr:#x}");
    }
}

// ---------- Linux frontend escapes ----------

#[test]
fn card_info() {
    let slot0 = B::new(72)
        .u8(0, 1)
        .u32(4, 0)
        .u8(8, 0x41)
        .u8(9, 0)
        .u8(10, 0)
        .u16(12, 0x10de)
        .u16(14, 0x2335)
        .u32(16, 0x4100)
        .u16(20, 0xff)
        .u64(24, 0xd800_0000)
        .u64(32, 0x100_0000)
        .u64(40, 0x3_8000_0000_0000)
        .u64(48, 0x24_0000_0000)
        .u32(56, 0)
        .put(60, b"nvidia0\0");
    let mut exit = slot0.0.clone();
    exit.extend_from_slice(&[0; 72]);
    let entry = vec![0; 144];
    let d = decode(Device::Ctl, req(200, 144), &entry, Some(&exit), Some(0));
    assert_eq!(d.escape, Some("CARD_INFO"));
    assert_eq!(field(&d, "slots"), 2);
    let cards = field(&d, "cards").as_array().unwrap();
    assert_eq!(cards.len(), 1);
    assert_eq!(
        cards[0],
        json!({
            "slot": 0, "pci": "0000:41:00.0", "vendor_id": "0x10de", "device_id": "0x2335",
            "gpu_id": "0x4100", "interrupt_line": 255, "reg_address": "0xd8000000", "reg_size": 0x100_0000,
            "fb_address": "0x3800000000000", "fb_size": 0x24_0000_0000u64, "minor_number": 0, "dev_name": "nvidia0",
        })
    );
    assert!(!d.truncated && d.nv_status.is_none());
    // The exit capture is short of the second slot.
    let d = decode(Device::Ctl, req(200, 144), &entry, Some(&slot0.0), Some(0));
    assert!(d.truncated);
    assert_eq!(field(&d, "cards").as_array().unwrap().len(), 1);
}

#[test]
fn register_fd_and_attach_gpus() {
    let e = B::new(4).i32(0, 5);
    let d = decode(Device::Gpu(0), req(201, 4), &e.0, Some(&e.0), Some(0));
    assert_eq!(d.escape, Some("REGISTER_FD"));
    assert_eq!(field(&d, "ctl_fd"), 5);
    assert!(d.nv_status.is_none());

    let e = B::new(12).u32(0, 0x4100).u32(4, 0).u32(8, 0x8100);
    let d = ctl(212, &e, &e);
    assert_eq!(d.escape, Some("ATTACH_GPUS_TO_FD"));
    assert_eq!(field(&d, "gpu_ids"), &json!(["0x4100", "0x8100"]));
}

#[test]
fn os_events_and_status_code() {
    for nr in [206, 207] {
        let e = B::new(16).u32(0, 0xc1d0_0001).u32(4, 0xcaf0_0001).u32(8, 12);
        let d = ctl(nr, &e, &e.clone().u32(12, 0x23));
        assert_eq!(field(&d, "hClient"), "0xc1d00001");
        assert_eq!(field(&d, "hDevice"), "0xcaf00001");
        assert_eq!(field(&d, "fd"), 12);
        assert_eq!(d.nv_status_name, Some("NV_ERR_INVALID_CLIENT"));
    }
    let e = B::new(12).u32(0, 0).u8(4, 0x41).u8(5, 0);
    let d = ctl(209, &e, &e.clone().u32(8, 0xf));
    assert_eq!(d.escape, Some("STATUS_CODE"));
    assert_eq!(field(&d, "bus"), 0x41);
    assert_eq!(d.nv_status_name, Some("NV_ERR_GPU_IS_LOST"));
    let e = B::new(8);
    let d = decode(Device::Gpu(1), req(213, 8), &e.0, Some(&e.clone().u32(0, 0x80).u32(4, 0).0), Some(0));
    assert_eq!(field(&d, "intrStatus"), "0x80");
    assert_eq!(d.nv_status, Some(0));
}

#[test]
fn check_version_str() {
    let e = B::new(72).u32(0, u32::from(b'2')).put(8, b"580.142\0");
    let x = e.clone().u32(4, 1);
    let d = ctl(210, &e, &x);
    assert_eq!(d.escape, Some("CHECK_VERSION_STR"));
    assert_eq!(field(&d, "cmd"), 0x32);
    assert_eq!(field(&d, "cmd_name"), "QUERY");
    assert_eq!(field(&d, "reply"), 1);
    assert_eq!(field(&d, "versionString"), "580.142");
    // A version mismatch is reported by -EINVAL.
    let d = decode(Device::Ctl, req(210, 72), &e.0, Some(&e.0), Some(-22));
    assert_eq!(d.errno, Some(22));
}

#[test]
fn wait_open_complete_sys_params_numa() {
    let e = B::new(8);
    let d = decode(Device::Gpu(0), req(218, 8), &e.0, Some(&e.clone().i32(0, 0).u32(4, 0).0), Some(0));
    assert_eq!(d.escape, Some("WAIT_OPEN_COMPLETE"));
    assert_eq!(field(&d, "rc"), 0);
    assert_eq!(d.nv_status_name, Some("NV_OK"));
    let d = decode(Device::Gpu(0), req(218, 8), &e.0, Some(&e.clone().i32(0, -5).u32(4, 0xf).0), Some(0));
    assert_eq!(field(&d, "rc"), -5);
    assert_eq!(d.nv_status_name, Some("NV_ERR_GPU_IS_LOST"));

    let e = B::new(8).u64(0, 0x800_0000);
    let d = ctl(214, &e, &e);
    assert_eq!(d.escape, Some("SYS_PARAMS"));
    assert_eq!(field(&d, "memblock_size"), 0x800_0000);
    assert!(d.nv_status.is_none());

    let x = B::new(560)
        .i32(0, 1)
        .i32(4, 3)
        .u64(8, 0x800_0000)
        .u64(16, 0x20_0000_0000)
        .u64(24, 0x1_0000_0000)
        .u8(32, 1)
        .u32(552, 2);
    let d = decode(Device::Gpu(0), req(215, 560), &[0; 560], Some(&x.0), Some(0));
    assert_eq!(d.escape, Some("NUMA_INFO"));
    assert_eq!(field(&d, "nid"), 1);
    assert_eq!(field(&d, "numa_status"), 3);
    assert_eq!(field(&d, "numa_status_name"), "ONLINE");
    assert_eq!(field(&d, "numa_mem_addr"), "0x2000000000");
    assert_eq!(field(&d, "use_auto_online"), true);
    assert_eq!(field(&d, "offline_addresses_count"), 2);
    assert!(d.nv_status.is_none());

    let e = B::new(4).i32(0, 5);
    let d = decode(Device::Gpu(0), req(216, 4), &e.0, Some(&e.0), Some(0));
    assert_eq!(field(&d, "numa_status_name"), "OFFLINE_IN_PROGRESS");
}

#[test]
fn export_to_dmabuf_fd_both_sizes() {
    let e = B::new(2608)
        .i32(0, -1)
        .u32(4, 0xc1d0_0001)
        .u32(8, 2)
        .u32(12, 2)
        .u32(16, 0)
        .u64(24, 0x40_0000)
        .u8(32, 1)
        .u8(33, 1)
        .u32(36, 0xcaf0_0101)
        .u32(40, 0xcaf0_0102);
    let d = decode(Device::Gpu(0), req(217, 2608), &e.0, Some(&e.clone().i32(0, 42).u32(2600, 0).0), Some(0));
    assert_eq!(d.escape, Some("EXPORT_TO_DMABUF_FD"));
    assert_eq!(field(&d, "fd"), 42);
    assert_eq!(field(&d, "fd_in"), -1);
    assert_eq!(field(&d, "numObjects"), 2);
    assert_eq!(field(&d, "totalSize"), 0x40_0000);
    assert_eq!(field(&d, "mappingType"), 1);
    assert_eq!(field(&d, "bAllowMmap"), true);
    assert_eq!(field(&d, "handles"), &json!(["0xcaf00101", "0xcaf00102"]));
    assert_eq!(d.nv_status, Some(0));

    let e = B::new(2600).u32(12, 1).u32(32, 0xcaf0_0201);
    let d = decode(Device::Gpu(0), req(217, 2600), &e.0, Some(&e.clone().u32(2592, 0x1f).0), Some(0));
    assert_eq!(field(&d, "struct"), "nv_ioctl_export_to_dma_buf_fd_t (535)");
    assert_eq!(field(&d, "handles"), &json!(["0xcaf00201"]));
    assert_eq!(d.nv_status_name, Some("NV_ERR_INVALID_ARGUMENT"));
}

// ---------- XFER ----------

#[test]
fn xfer_unwraps_the_inner_escape() {
    let hdr = B::new(16).u32(0, 0x2a).u32(4, 32).u64(8, 0x7ffd_aaaa_0000);
    let inner = B::new(32).u32(0, 0xc1d0_0001).u32(4, 0xc1d0_0001).u32(8, 0x0000_0201).u32(24, 0x400);
    let mut entry = hdr.0.clone();
    entry.extend_from_slice(&inner.0);
    let mut exit = hdr.0.clone();
    exit.extend_from_slice(&inner.clone().u32(28, 0).0);
    let r = req(0xd3, 16);
    assert_eq!(param_size(Device::Ctl, r), 16);
    assert_eq!(xfer_inner(r, &entry), Some((0x2a, 32, 0x7ffd_aaaa_0000)));
    assert_eq!(xfer_inner(r, &entry[..15]), None);
    assert_eq!(xfer_inner(req(0xd3, 24), &entry), None);
    assert_eq!(xfer_inner(req(0x2a, 32), &entry), None);

    let d = decode(Device::Ctl, r, &entry, Some(&exit), Some(0));
    assert_eq!(d.escape, Some("RM_CONTROL"));
    assert_eq!((d.nr, d.size, d.known, d.truncated), (0x2a, 32, true, false));
    assert_eq!(field(&d, "xfer"), true);
    assert_eq!(field(&d, "xfer_size"), 32);
    assert_eq!(field(&d, "xfer_ptr"), "0x7ffdaaaa0000");
    assert_eq!(field(&d, "cmd_name"), "NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS");
    assert_eq!(field(&d, "params_size"), 0x400);
    assert_eq!(d.nv_status_name, Some("NV_OK"));

    // The inner bytes were not captured: header decoded, the rest truncated.
    let d = decode(Device::Ctl, r, &hdr.0, Some(&hdr.0), Some(0));
    assert_eq!(d.escape, Some("RM_CONTROL"));
    assert!(d.truncated && d.nv_status.is_none());

    // Wrong outer size: the driver rejects it before reading anything.
    let d = decode(Device::Ctl, req(0xd3, 24), &entry, None, Some(-22));
    assert_eq!(d.escape, Some("IOCTL_XFER_CMD"));
    assert_eq!(field(&d, "size_mismatch"), true);
    assert_eq!(d.errno, Some(22));

    // An XFER inside an XFER is not unwrapped again.
    let nested = B::new(16).u32(0, 0xd3).u32(4, 16);
    let d = decode(Device::Ctl, r, &nested.0, None, Some(-22));
    assert_eq!(d.escape, Some("IOCTL_XFER_CMD"));
    assert_eq!(field(&d, "nested_xfer"), true);

    // Inner size above NV_ABSOLUTE_MAX_IOCTL_SIZE is flagged.
    let big = B::new(16).u32(0, 200).u32(4, 20000);
    let d = decode(Device::Ctl, r, &big.0, None, Some(-22));
    assert_eq!(d.escape, Some("CARD_INFO"));
    assert_eq!(field(&d, "xfer_size_too_large"), true);
}

// ---------- UVM ----------

#[test]
fn uvm_register_gpu() {
    let e = B::new(40).put(0, &UUID).i32(24, 11).u32(28, 0xc1d0_0001).u32(32, 0);
    let x = e.clone().u8(16, 1).i32(20, 2).u32(36, 0);
    let d = decode(Device::Uvm, 37, &e.0, Some(&x.0), Some(0));
    assert_eq!(d.escape, Some("UVM_REGISTER_GPU"));
    assert_eq!((d.nr, d.size, d.known, d.truncated), (37, 40, true, false));
    assert_eq!(field(&d, "gpu_uuid"), UUID_STR);
    assert_eq!(field(&d, "numaEnabled"), true);
    assert_eq!(field(&d, "numaNodeId"), 2);
    assert_eq!(field(&d, "rmCtrlFd"), 11);
    assert_eq!(field(&d, "hClient"), "0xc1d00001");
    assert_eq!(d.nv_status_name, Some("NV_OK"));
    assert!(!d.fields.contains_key("unrouted"));

    let d = decode(Device::Uvm, 37, &e.0, Some(&e.clone().u32(36, 0x16).0), Some(0));
    assert_eq!(d.nv_status_name, Some("NV_ERR_ILLEGAL_ACTION"));
}

#[test]
fn uvm_common_commands() {
    let d = decode(Device::Uvm, 0x3000_0001, &B::new(16).u64(0, 2).0, Some(&B::new(16).u64(0, 2).0), Some(0));
    assert_eq!(d.escape, Some("UVM_INITIALIZE"));
    assert_eq!(field(&d, "flags"), "0x2");
    assert_eq!(d.nv_status, Some(0));

    let d = decode(Device::Uvm, 0x3000_0002, &[], Some(&[]), Some(0));
    assert_eq!(d.escape, Some("UVM_DEINITIALIZE"));
    assert!(d.nv_status.is_none() && !d.truncated && d.fields.is_empty());

    let d = decode(Device::Uvm, 39, &[0; 8], Some(&B::new(8).u8(0, 1).0), Some(0));
    assert_eq!(d.escape, Some("UVM_PAGEABLE_MEM_ACCESS"));
    assert_eq!(field(&d, "pageableMemAccess"), true);

    let d = decode(Device::Uvm, 23, &[0; 16], Some(&B::new(16).u64(0, 7).0), Some(0));
    assert_eq!(d.escape, Some("UVM_CREATE_RANGE_GROUP"));
    assert_eq!(field(&d, "rangeGroupId"), 7);

    let e = B::new(32).put(0, &UUID).i32(16, 11).u32(20, 0xc1d0_0001).u32(24, 0xcaf0_0009);
    let d = decode(Device::Uvm, 25, &e.0, Some(&e.clone().u32(28, 0x68).0), Some(0));
    assert_eq!(d.escape, Some("UVM_REGISTER_GPU_VASPACE"));
    assert_eq!(field(&d, "hVaSpace"), "0xcaf00009");
    assert_eq!(d.nv_status_name, Some("NV_ERR_UVM_ADDRESS_IN_USE"));

    let e = B::new(56).put(0, &UUID).u32(24, 0xcaf0_0010).u64(32, 0x2_0000_0000).u64(40, 0x1000);
    let d = decode(Device::Uvm, 27, &e.0, Some(&e.0), Some(0));
    assert_eq!(d.escape, Some("UVM_REGISTER_CHANNEL"));
    assert_eq!(field(&d, "hChannel"), "0xcaf00010");
    assert_eq!(field(&d, "base"), "0x200000000");

    for num in [34u64, 72, 73] {
        let e = B::new(24).u64(0, 0x7f00_0000_0000).u64(8, 0x20_0000);
        let d = decode(Device::Uvm, num, &e.0, Some(&e.clone().u32(16, 0).0), Some(0));
        assert_eq!(field(&d, "base"), "0x7f0000000000");
        assert_eq!(field(&d, "length"), 0x20_0000);
        assert_eq!(d.nv_status, Some(0));
    }
    assert_eq!(uvm_name(72), Some("UVM_VALIDATE_VA_RANGE"));
    assert_eq!(uvm_name(73), Some("UVM_CREATE_EXTERNAL_RANGE"));

    let d = decode(Device::Uvm, 75, &B::new(8).i32(0, 4).0, Some(&B::new(8).i32(0, 4).0), Some(0));
    assert_eq!(d.escape, Some("UVM_MM_INITIALIZE"));
    assert_eq!(field(&d, "uvmFd"), 4);

    let e = B::new(40).u64(0, 0x1000).u64(8, 0x2000).put(16, &UUID);
    let d = decode(Device::Uvm, 65, &e.0, Some(&e.0), Some(0));
    assert_eq!(d.escape, Some("UVM_MAP_DYNAMIC_PARALLELISM_REGION"));
    assert_eq!(field(&d, "gpuUuid"), UUID_STR);

    // No exit capture: the status comes from the entry bytes, and says so.
    let d = decode(Device::Uvm, 34, &[0; 24], None, None);
    assert_eq!(d.nv_status, Some(0));
    assert_eq!(field(&d, "status_from"), "entry");
}

#[test]
fn uvm_map_external_allocation_head_and_tail() {
    let r = 33u64;
    let head = B::new(MAX_PARAM_COPY)
        .u64(0, 0x7f00_0000_0000)
        .u64(8, 0x20_0000)
        .u64(16, 0)
        .put(24, &UUID)
        .u32(24 + 16, 1)
        .u32(24 + 20, 2);
    // Only the capped head: fields past 4096 and rmStatus are missing.
    let d = decode(Device::Uvm, r, &head.0, Some(&head.0), Some(0));
    assert_eq!(d.escape, Some("UVM_MAP_EXTERNAL_ALLOCATION"));
    assert_eq!(d.size, 9264);
    assert!(d.truncated && d.nv_status.is_none());
    assert_eq!(field(&d, "base"), "0x7f0000000000");
    assert!(!d.fields.contains_key("hMemory"));

    // With the tail window (9240..9264): count, fd, handles and rmStatus.
    let (off, len) = param_tail(Device::Uvm, r).unwrap();
    let tail =
        B::new(len).u64(9240 - off, 1).i32(9248 - off, 11).u32(9252 - off, 0xc1d0_0001).u32(9256 - off, 0xcaf0_0077);
    let tail_exit = tail.clone().u32(9260 - off, 0x1e);
    let d = decode_with_tail(Device::Uvm, r, &head.0, Some(&head.0), Some(0), Some(&tail.0), Some(&tail_exit.0));
    assert!(!d.truncated, "{}", d.to_json());
    assert_eq!(field(&d, "gpuAttributesCount"), 1);
    assert_eq!(field(&d, "rmCtrlFd"), 11);
    assert_eq!(field(&d, "hClient"), "0xc1d00001");
    assert_eq!(field(&d, "hMemory"), "0xcaf00077");
    assert_eq!(d.nv_status_name, Some("NV_ERR_INVALID_ADDRESS"));
    assert_eq!(
        field(&d, "perGpuAttributes"),
        &json!([{
            "gpuUuid": UUID_STR, "gpuMappingType": 1, "gpuCachingType": 2,
            "gpuFormatType": 0, "gpuElementBits": 0, "gpuCompressionType": 0,
        }])
    );

    // ALLOC_SEMAPHORE_POOL: rmStatus at 9240 in its 16-byte tail.
    let (off, len) = param_tail(Device::Uvm, 68).unwrap();
    let tail = B::new(len).u64(9232 - off, 0);
    let d = decode_with_tail(
        Device::Uvm,
        68,
        &[0; MAX_PARAM_COPY],
        Some(&[0; MAX_PARAM_COPY]),
        Some(0),
        Some(&tail.0),
        Some(&tail.clone().u32(9240 - off, 0).0),
    );
    assert_eq!(d.escape, Some("UVM_ALLOC_SEMAPHORE_POOL"));
    assert_eq!((d.nv_status, d.truncated), (Some(0), false));
}

#[test]
fn uvm_routes_and_unknowns() {
    let tracker = B::new(56).u64(0, 0x1000).u64(8, 0x1000).u64(16, 0x2000).put(24, &UUID).u32(40, 1).u32(44, 3);
    let d = decode(Device::UvmTools, 56, &tracker.0, Some(&tracker.0), Some(0));
    assert_eq!(d.escape, Some("UVM_TOOLS_INIT_EVENT_TRACKER"));
    assert_eq!(field(&d, "processor"), UUID_STR);
    assert_eq!(field(&d, "uvmFd"), 3);
    assert!(!d.fields.contains_key("unrouted"));
    let d = decode(Device::Uvm, 56, &tracker.0, Some(&tracker.0), Some(0));
    assert_eq!(field(&d, "unrouted"), true);
    assert_eq!(uvm_route(62), Some(UvmRoute::Main));
    assert_eq!(uvm_route(60), Some(UvmRoute::Tools));
    assert_eq!(uvm_route(1), Some(UvmRoute::Unrouted));

    let d = decode(Device::Uvm, 0xdead, &[1, 2, 3], Some(&[1, 2, 3]), Some(-25));
    assert!(!d.known && d.escape.is_none());
    assert_eq!(field(&d, "request"), "0xdead");
    assert_eq!(d.errno, Some(25));
    assert_eq!(uvm_name(0xdead), None);
    // UVM numbers are plain integers, not _IOC: an _IOC-looking number is unknown.
    assert_eq!(uvm_name(req(0x21, 32)), None);
}

// ---------- truncation, errno, unknowns, JSON ----------

#[test]
fn short_bytes_decode_what_is_there() {
    let e = B::new(32).u32(0, 0xc1d0_0001).u32(4, 2).u32(8, 0x2080_1303);
    let d = decode(Device::Ctl, req(0x2a, 32), &e.0[..20], None, None);
    assert!(d.truncated);
    assert_eq!(field(&d, "hClient"), "0xc1d00001");
    assert_eq!(field(&d, "cmd_name"), "NV2080_CTRL_CMD_FB_GET_INFO_V2");
    assert!(!d.fields.contains_key("params") && !d.fields.contains_key("params_size"));
    assert_eq!(d.nv_status, None);

    // A short exit capture: entry fields stay, the status is missing.
    let d = decode(Device::Ctl, req(0x2a, 32), &e.0, Some(&e.0[..8]), Some(0));
    assert!(d.truncated);
    assert_eq!(field(&d, "params_size"), 0);
    assert_eq!(d.nv_status, None);

    // In/out fields: with the exit capture short of them, only the entry value is kept.
    let a = B::new(48).u32(8, 0xcaf0_0001).u32(12, 0x80);
    let d = decode(Device::Ctl, req(0x2b, 48), &a.0, Some(&a.0[..8]), Some(0));
    assert!(d.truncated);
    assert!(!d.fields.contains_key("hObjectNew"));
    assert_eq!(field(&d, "hObjectNew_in"), "0xcaf00001");
    assert_eq!(field(&d, "class_in"), "0x0080");

    let d = decode(Device::Ctl, req(0x2b, 48), &[], None, None);
    assert!(d.truncated && d.known);
    assert_eq!(d.escape, Some("RM_ALLOC"));
}

#[test]
fn errno_from_ret() {
    let e = [0u8; 16];
    let cases: &[(Option<i64>, Option<i32>)] = &[
        (None, None),
        (Some(0), None),
        (Some(3), None),
        (Some(-14), Some(14)),
        (Some(-4095), Some(4095)),
        (Some(-4096), None),
        (Some(i64::MIN), None),
    ];
    for &(ret, errno) in cases {
        assert_eq!(decode(Device::Ctl, req(0x29, 16), &e, None, ret).errno, errno, "{ret:?}");
    }
}

#[test]
fn unknown_numbers_are_kept_raw() {
    let d = decode(Device::Ctl, req(0x99, 24), &[0; 24], Some(&[0; 24]), Some(0));
    assert!(!d.known && d.escape.is_none());
    assert_eq!((d.nr, d.size), (0x99, 24));
    assert_eq!(d.to_json()["request"], "0xc0184699");
    // Another _IOC type: the driver ignores it; noted.
    let d = decode(Device::Ctl, 0xc020_412a, &[0; 32], None, None);
    assert_eq!(d.escape, Some("RM_CONTROL"));
    assert_eq!(field(&d, "ioc_type"), "0x41");
    let d = decode(Device::Other, 0x8008_6d01, &[0; 8], None, Some(0));
    assert!(!d.known);
    assert_eq!(field(&d, "ioc_dir"), 2);
}

#[test]
fn decoded_json_shape() {
    let e = B::new(16).u32(8, 0xcaf0_0001);
    let d = decode(Device::Gpu(2), req(0x29, 16), &e.0, Some(&e.0), Some(0));
    let j = d.to_json();
    assert_eq!(j["device"], "nvidia2");
    assert_eq!(j["escape"], "RM_FREE");
    assert_eq!(j["nr"], 0x29);
    assert_eq!(j["size"], 16);
    assert_eq!(j["known"], true);
    assert_eq!(j["nv_status"], "0x0");
    assert_eq!(j["nv_status_name"], "NV_OK");
    assert_eq!(j["errno"], Value::Null);
    assert_eq!(j["truncated"], false);
    assert_eq!(j["fields"]["hObjectOld"], "0xcaf00001");
}

// ---------- name tables ----------

#[test]
fn control_commands_round_trip_by_name() {
    // Values as #defined in open-gpu-kernel-modules@580.142 src/common/sdk/nvidia/inc/ctrl/**.
    let cmds: &[(u32, &str)] = &[
        (0x0000_0101, "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION"),
        (0x0000_0102, "NV0000_CTRL_CMD_SYSTEM_GET_CPU_INFO"),
        (0x0000_012b, "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2"),
        (0x0000_0136, "NV0000_CTRL_CMD_SYSTEM_GET_FABRIC_STATUS"),
        (0x0000_013a, "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_MATRIX"),
        (0x0000_01f0, "NV0000_CTRL_CMD_SYSTEM_GET_FEATURES"),
        (0x0000_0201, "NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS"),
        (0x0000_0202, "NV0000_CTRL_CMD_GPU_GET_ID_INFO"),
        (0x0000_0205, "NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2"),
        (0x0000_0214, "NV0000_CTRL_CMD_GPU_GET_PROBED_IDS"),
        (0x0000_0215, "NV0000_CTRL_CMD_GPU_ATTACH_IDS"),
        (0x0000_021b, "NV0000_CTRL_CMD_GPU_GET_PCI_INFO"),
        (0x0000_0274, "NV0000_CTRL_CMD_GPU_GET_UUID_INFO"),
        (0x0000_0275, "NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID"),
        (0x0000_0a04, "NV0000_CTRL_CMD_SYNC_GPU_BOOST_GROUP_INFO"),
        (0x0000_0d01, "NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE"),
        (0x0000_0d04, "NV0000_CTRL_CMD_CLIENT_SET_INHERITED_SHARE_POLICY"),
        (0x0000_3d05, "NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD"),
        (0x0000_3d06, "NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_FROM_FD"),
        (0x0080_0201, "NV0080_CTRL_CMD_GPU_GET_CLASSLIST"),
        (0x0080_0280, "NV0080_CTRL_CMD_GPU_GET_NUM_SUBDEVICES"),
        (0x0080_0289, "NV0080_CTRL_CMD_GPU_GET_VIRTUALIZATION_MODE"),
        (0x0080_0292, "NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2"),
        (0x0080_1307, "NV0080_CTRL_CMD_FB_GET_CAPS_V2"),
        (0x0080_1402, "NV0080_CTRL_CMD_HOST_GET_CAPS_V2"),
        (0x0080_1701, "NV0080_CTRL_CMD_FIFO_GET_CAPS"),
        (0x0080_1806, "NV0080_CTRL_CMD_DMA_ADV_SCHED_GET_VA_CAPS"),
        (0x0080_180d, "NV0080_CTRL_CMD_DMA_GET_CAPS"),
        (0x00fd_0101, "NV00FD_CTRL_CMD_GET_INFO"),
        (0x2080_0101, "NV2080_CTRL_CMD_GPU_GET_INFO"),
        (0x2080_0102, "NV2080_CTRL_CMD_GPU_GET_INFO_V2"),
        (0x2080_0110, "NV2080_CTRL_CMD_GPU_GET_NAME_STRING"),
        (0x2080_0111, "NV2080_CTRL_CMD_GPU_GET_SHORT_NAME_STRING"),
        (0x2080_0119, "NV2080_CTRL_CMD_GPU_GET_SIMULATION_INFO"),
        (0x2080_012f, "NV2080_CTRL_CMD_GPU_QUERY_ECC_STATUS"),
        (0x2080_0131, "NV2080_CTRL_CMD_GPU_QUERY_COMPUTE_MODE_RULES"),
        (0x2080_0142, "NV2080_CTRL_CMD_GPU_GET_ID"),
        (0x2080_014a, "NV2080_CTRL_CMD_GPU_GET_GID_INFO"),
        (0x2080_0170, "NV2080_CTRL_CMD_GPU_GET_ENGINES_V2"),
        (0x2080_018b, "NV2080_CTRL_CMD_GPU_GET_ACTIVE_PARTITION_IDS"),
        (0x2080_01a3, "NV2080_CTRL_CMD_GET_GPU_FABRIC_PROBE_INFO"),
        (0x2080_0301, "NV2080_CTRL_CMD_EVENT_SET_NOTIFICATION"),
        (0x2080_0406, "NV2080_CTRL_CMD_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO"),
        (0x2080_1109, "NV2080_CTRL_CMD_FIFO_GET_INFO"),
        (0x2080_110d, "NV2080_CTRL_CMD_FIFO_GET_USERD_LOCATION"),
        (0x2080_1201, "NV2080_CTRL_CMD_GR_GET_INFO"),
        (0x2080_1218, "NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE"),
        (0x2080_121b, "NV2080_CTRL_CMD_GR_GET_GLOBAL_SM_ORDER"),
        (0x2080_1227, "NV2080_CTRL_CMD_GR_GET_CAPS_V2"),
        (0x2080_1303, "NV2080_CTRL_CMD_FB_GET_INFO_V2"),
        (0x2080_1701, "NV2080_CTRL_CMD_MC_GET_ARCH_INFO"),
        (0x2080_1801, "NV2080_CTRL_CMD_BUS_GET_PCI_INFO"),
        (0x2080_1823, "NV2080_CTRL_CMD_BUS_GET_INFO_V2"),
        (0x2080_182a, "NV2080_CTRL_CMD_BUS_GET_PCIE_SUPPORTED_GPU_ATOMICS"),
        (0x2080_2068, "NV2080_CTRL_CMD_PERF_GET_CURRENT_PSTATE"),
        (0x2080_2a0a, "NV2080_CTRL_CMD_CE_GET_ALL_CAPS"),
        (0x2080_3002, "NV2080_CTRL_CMD_NVLINK_GET_NVLINK_STATUS"),
        (0x2080_3125, "NV2080_CTRL_CMD_FLCN_GET_CTX_BUFFER_SIZE"),
        (0x2080_3601, "NV2080_CTRL_CMD_GSP_GET_FEATURES"),
        (0x2080_3801, "NV2080_CTRL_CMD_GRMGR_GET_GR_FS_INFO"),
        (0x503c_0102, "NV503C_CTRL_CMD_REGISTER_VA_SPACE"),
        (0x83de_0309, "NV83DE_CTRL_CMD_DEBUG_SET_EXCEPTION_MASK"),
        (0x906f_0101, "NV906F_CTRL_GET_CLASS_ENGINEID"),
        (0x90f1_0101, "NV90F1_CTRL_CMD_VASPACE_GET_GMMU_FORMAT"),
        (0xa06c_0101, "NVA06C_CTRL_CMD_GPFIFO_SCHEDULE"),
        (0xa06c_0103, "NVA06C_CTRL_CMD_SET_TIMESLICE"),
        (0xa06f_0103, "NVA06F_CTRL_CMD_GPFIFO_SCHEDULE"),
        (0xc36f_0108, "NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN"),
        (0xc36f_010a, "NVC36F_CTRL_CMD_GPFIFO_SET_WORK_SUBMIT_TOKEN_NOTIF_INDEX"),
        (0xcb33_0101, "NV_CONF_COMPUTE_CTRL_CMD_SYSTEM_GET_CAPABILITIES"),
    ];
    assert!(cmds.len() >= 60);
    for &(cmd, name) in cmds {
        assert_eq!(control_name(cmd), Some(name), "{cmd:#x}");
        assert_eq!(controls().find(|&(_, n)| n == name).map(|(c, _)| c), Some(cmd), "{name}");
    }
    assert_eq!(control_name(0x2080_ffff), None);
    assert_eq!(control_name(0x0080_028b), None);
    let ids: Vec<u32> = controls().map(|(c, _)| c).collect();
    assert!(ids.len() >= 200 && ids.windows(2).all(|w| w[0] < w[1]), "control table must be sorted, unique");
}

#[test]
fn classes_round_trip_by_name() {
    // Values as #defined in open-gpu-kernel-modules@580.142 class/clXXXX.h and nvos.h.
    let cls: &[(u32, &str)] = &[
        (0x0000, "NV01_ROOT"),
        (0x0001, "NV01_ROOT_NON_PRIV"),
        (0x0002, "NV01_CONTEXT_DMA"),
        (0x0005, "NV01_EVENT"),
        (0x003e, "NV01_MEMORY_SYSTEM"),
        (0x0040, "NV01_MEMORY_LOCAL_USER"),
        (0x0041, "NV01_ROOT_CLIENT"),
        (0x0050, "NV_CE_UTILS"),
        (0x0070, "NV01_MEMORY_VIRTUAL"),
        (0x0071, "NV01_MEMORY_SYSTEM_OS_DESCRIPTOR"),
        (0x0079, "NV01_EVENT_OS_EVENT"),
        (0x007e, "NV01_EVENT_KERNEL_CALLBACK_EX"),
        (0x0080, "NV01_DEVICE_0"),
        (0x00c2, "NV01_MEMORY_LOCAL_PHYSICAL"),
        (0x00da, "NV_SEMAPHORE_SURFACE"),
        (0x00de, "RM_USER_SHARED_DATA"),
        (0x00f8, "NV_MEMORY_FABRIC"),
        (0x00fd, "NV_MEMORY_MULTICAST_FABRIC"),
        (0x2080, "NV20_SUBDEVICE_0"),
        (0x2081, "NV2081_BINAPI"),
        (0x208f, "NV20_SUBDEVICE_DIAG"),
        (0x503c, "NV50_THIRD_PARTY_P2P"),
        (0x50a0, "NV50_MEMORY_VIRTUAL"),
        (0x83de, "GT200_DEBUGGER"),
        (0x900e, "MPS_COMPUTE"),
        (0x9067, "FERMI_CONTEXT_SHARE_A"),
        (0x90f1, "FERMI_VASPACE_A"),
        (0xa06c, "KEPLER_CHANNEL_GROUP_A"),
        (0xb2cc, "MAXWELL_PROFILER_DEVICE"),
        (0xc361, "VOLTA_USERMODE_A"),
        (0xc36f, "VOLTA_CHANNEL_GPFIFO_A"),
        (0xc46f, "TURING_CHANNEL_GPFIFO_A"),
        (0xc56f, "AMPERE_CHANNEL_GPFIFO_A"),
        (0xc5b5, "TURING_DMA_COPY_A"),
        (0xc5c0, "TURING_COMPUTE_A"),
        (0xc661, "HOPPER_USERMODE_A"),
        (0xc6b5, "AMPERE_DMA_COPY_A"),
        (0xc6c0, "AMPERE_COMPUTE_A"),
        (0xc7b5, "AMPERE_DMA_COPY_B"),
        (0xc7c0, "AMPERE_COMPUTE_B"),
        (0xc86f, "HOPPER_CHANNEL_GPFIFO_A"),
        (0xc8b5, "HOPPER_DMA_COPY_A"),
        (0xc96f, "BLACKWELL_CHANNEL_GPFIFO_A"),
        (0xc9c0, "ADA_COMPUTE_A"),
        (0xcb33, "NV_CONFIDENTIAL_COMPUTE"),
        (0xcbc0, "HOPPER_COMPUTE_A"),
        (0xcdc0, "BLACKWELL_COMPUTE_A"),
    ];
    assert!(cls.len() >= 40);
    for &(id, name) in cls {
        assert_eq!(class_name(id), Some(name), "{id:#x}");
        assert_eq!(classes().find(|&(_, n)| n == name).map(|(c, _)| c), Some(id), "{name}");
    }
    assert_eq!(class_name(0xbeef), None);
    let ids: Vec<u32> = classes().map(|(c, _)| c).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "class table must be sorted, unique");
}

#[test]
fn nv_status_names() {
    // Values as in open-gpu-kernel-modules@580.142 nvstatuscodes.h.
    let st: &[(u32, &str)] = &[
        (0x00, "NV_OK"),
        (0x02, "NV_ERR_BUFFER_TOO_SMALL"),
        (0x0f, "NV_ERR_GPU_IS_LOST"),
        (0x16, "NV_ERR_ILLEGAL_ACTION"),
        (0x17, "NV_ERR_IN_USE"),
        (0x1a, "NV_ERR_INSUFFICIENT_RESOURCES"),
        (0x1b, "NV_ERR_INSUFFICIENT_PERMISSIONS"),
        (0x1e, "NV_ERR_INVALID_ADDRESS"),
        (0x1f, "NV_ERR_INVALID_ARGUMENT"),
        (0x22, "NV_ERR_INVALID_CLASS"),
        (0x23, "NV_ERR_INVALID_CLIENT"),
        (0x24, "NV_ERR_INVALID_COMMAND"),
        (0x26, "NV_ERR_INVALID_DEVICE"),
        (0x2e, "NV_ERR_INVALID_LIMIT"),
        (0x33, "NV_ERR_INVALID_OBJECT_HANDLE"),
        (0x36, "NV_ERR_INVALID_OBJECT_PARENT"),
        (0x3a, "NV_ERR_INVALID_PARAM_STRUCT"),
        (0x40, "NV_ERR_INVALID_STATE"),
        (0x51, "NV_ERR_NO_MEMORY"),
        (0x55, "NV_ERR_NOT_READY"),
        (0x56, "NV_ERR_NOT_SUPPORTED"),
        (0x57, "NV_ERR_OBJECT_NOT_FOUND"),
        (0x65, "NV_ERR_TIMEOUT"),
        (0x68, "NV_ERR_UVM_ADDRESS_IN_USE"),
        (0xffff, "NV_ERR_GENERIC"),
        (0x10005, "NV_WARN_MORE_PROCESSING_REQUIRED"),
    ];
    for &(v, name) in st {
        assert_eq!(nv_status_name(v), Some(name), "{v:#x}");
    }
    assert_eq!(nv_status_description(0x1f), Some("Invalid argument to call"));
    assert_eq!(nv_status_name(0xdead_beef), None);
    let vals: Vec<u32> = nv_statuses().map(|(v, _)| v).collect();
    assert!(vals.len() >= 140 && vals.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn uvm_names() {
    let names: &[(u64, &str)] = &[
        (0x3000_0001, "UVM_INITIALIZE"),
        (0x3000_0002, "UVM_DEINITIALIZE"),
        (23, "UVM_CREATE_RANGE_GROUP"),
        (24, "UVM_DESTROY_RANGE_GROUP"),
        (25, "UVM_REGISTER_GPU_VASPACE"),
        (27, "UVM_REGISTER_CHANNEL"),
        (33, "UVM_MAP_EXTERNAL_ALLOCATION"),
        (34, "UVM_FREE"),
        (37, "UVM_REGISTER_GPU"),
        (38, "UVM_UNREGISTER_GPU"),
        (39, "UVM_PAGEABLE_MEM_ACCESS"),
        (51, "UVM_MIGRATE"),
        (56, "UVM_TOOLS_INIT_EVENT_TRACKER"),
        (65, "UVM_MAP_DYNAMIC_PARALLELISM_REGION"),
        (68, "UVM_ALLOC_SEMAPHORE_POOL"),
        (72, "UVM_VALIDATE_VA_RANGE"),
        (73, "UVM_CREATE_EXTERNAL_RANGE"),
        (75, "UVM_MM_INITIALIZE"),
        (80, "UVM_DISCARD"),
        (2047, "UVM_IS_8_SUPPORTED"),
    ];
    for &(r, name) in names {
        assert_eq!(uvm_name(r), Some(name), "{r:#x}");
    }
    let nums: Vec<u32> = uvm_ioctls().map(|(n, _)| n).collect();
    assert!(nums.windows(2).all(|w| w[0] < w[1]), "UVM table must be sorted");
    assert_eq!(uvm_status_offset(33), Some(9260));
    assert_eq!(uvm_status_offset(68), Some(9240));
    assert_eq!(uvm_status_offset(42), Some(36));
}

// ---------- properties: no input panics ----------

fn any_device() -> impl Strategy<Value = Device> {
    prop_oneof![
        Just(Device::Ctl),
        any::<u32>().prop_map(Device::Gpu),
        Just(Device::Uvm),
        Just(Device::UvmTools),
        Just(Device::Other),
    ]
}

/// Escape numbers worth hitting: every known one, plus any byte.
fn any_nr() -> impl Strategy<Value = u32> {
    let known: Vec<u32> = escape_names().map(|(n, _)| n).collect();
    prop_oneof![3 => proptest::sample::select(known), 1 => 0u32..256]
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

fn check(d: &Decoded) {
    let j = d.to_json();
    assert!(j.is_object());
    if !d.known {
        assert!(d.escape.is_none());
    }
    assert_eq!(d.nv_status_name, d.nv_status.and_then(nv_status_name));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn prop_arbitrary_requests_never_panic(
        dev in any_device(),
        request in any::<u64>(),
        entry in bytes(700),
        exit in proptest::option::of(bytes(700)),
        ret in proptest::option::of(any::<i64>()),
    ) {
        check(&decode(dev, request, &entry, exit.as_deref(), ret));
        let _ = param_size(dev, request);
        let _ = param_tail(dev, request);
        let _ = status_offset(dev, request);
        let _ = xfer_inner(request, &entry);
    }

    #[test]
    fn prop_known_escapes_any_size_never_panic(
        dev in prop_oneof![Just(Device::Ctl), Just(Device::Gpu(0))],
        nr in any_nr(),
        size in prop_oneof![0u32..3000, 0u32..16384],
        entry in bytes(3000),
        exit in proptest::option::of(bytes(3000)),
    ) {
        let r = nv_request(nr, size);
        let d = decode(dev, r, &entry, exit.as_deref(), Some(0));
        check(&d);
        // The escape number, or for a well-formed XFER (16 bytes, header read)
        // its inner `cmd` (Decoded::nr).
        let want = match entry.get(..4) {
            Some(c) if nr == NV_ESC_IOCTL_XFER_CMD && size == 16 && entry.len() >= 16 => {
                u32::from_le_bytes(c.try_into().unwrap())
            }
            _ => nr,
        };
        prop_assert_eq!(d.nr, want);
        prop_assert!(param_size(dev, r) <= MAX_PARAM_COPY);
    }

    #[test]
    fn prop_xfer_never_panics(
        inner_nr in prop_oneof![any_nr(), any::<u32>()],
        inner_size in prop_oneof![0u32..600, any::<u32>()],
        ptr in any::<u64>(),
        inner_entry in bytes(600),
        inner_exit in proptest::option::of(bytes(600)),
    ) {
        let mut hdr = Vec::with_capacity(16);
        hdr.extend_from_slice(&inner_nr.to_le_bytes());
        hdr.extend_from_slice(&inner_size.to_le_bytes());
        hdr.extend_from_slice(&ptr.to_le_bytes());
        let r = nv_request(NV_ESC_IOCTL_XFER_CMD, 16);
        prop_assert_eq!(xfer_inner(r, &hdr), Some((inner_nr, inner_size, ptr)));
        let entry: Vec<u8> = hdr.iter().chain(&inner_entry).copied().collect();
        let exit = inner_exit.map(|x| hdr.iter().chain(&x).copied().collect::<Vec<u8>>());
        let d = decode(Device::Ctl, r, &entry, exit.as_deref(), None);
        check(&d);
        prop_assert_eq!(d.nr, inner_nr);
        prop_assert_eq!(d.size, inner_size);
    }

    #[test]
    fn prop_uvm_never_panics(
        dev in prop_oneof![Just(Device::Uvm), Just(Device::UvmTools)],
        num in prop_oneof![
            3 => proptest::sample::select(uvm_ioctls().map(|(n, _)| u64::from(n)).collect::<Vec<_>>()),
            1 => any::<u64>(),
        ],
        entry in bytes(4200),
        exit in proptest::option::of(bytes(4200)),
        entry_tail in proptest::option::of(bytes(40)),
        exit_tail in proptest::option::of(bytes(40)),
    ) {
        let (et, xt) = (entry_tail.as_deref(), exit_tail.as_deref());
        let d = decode_with_tail(dev, num, &entry, exit.as_deref(), Some(0), et, xt);
        check(&d);
        prop_assert_eq!(d.known, uvm_name(num).is_some());
        prop_assert!(param_size(dev, num) <= MAX_PARAM_COPY);
    }
}
