//! Decoder for the ioctls a traced process makes on NVIDIA's device files:
//! /dev/nvidiactl and /dev/nvidiaN (the "frontend": RM escapes and the Linux
//! escapes of nv.c) and /dev/nvidia-uvm, /dev/nvidia-uvm-tools (UVM).
//!
//! Pure: bytes in, values out, no I/O. The eBPF side records, per ioctl, the
//! request number, the first [`param_size`] bytes of the parameter struct at
//! syscall entry and again at exit, and the return value; [`decode`] turns that
//! into a [`Decoded`]. Facts are for the open driver 580 on x86-64; every table
//! cites the NVIDIA/open-gpu-kernel-modules (580.142) or google/gvisor file it
//! was taken from.
//!
//! What the eBPF side copies:
//! - frontend: `min(_IOC_SIZE(request), MAX_PARAM_COPY)` bytes ([`param_size`]);
//! - NV_ESC_IOCTL_XFER_CMD: the 16-byte `nv_ioctl_xfer_t`, then, from its `ptr`,
//!   [`xfer_copy_len`]`(size)` bytes of the inner struct appended after those 16
//!   (both at entry and at exit); [`xfer_inner`] reads the header;
//! - UVM: the command's struct size from the UVM table (the request carries
//!   none), capped; for the two structs larger than the cap, [`param_tail`] names
//!   a second small window holding their trailing fields and `rmStatus`, which
//!   [`decode_with_tail`] takes.
//!
//! Field keys in [`Decoded::fields`] are the C field names (`hClient`,
//! `hObjectNew`, `pLinearAddress`, …), except `hClass` → `class` and
//! `paramsSize`/`paramSize` → `params_size`. Derived keys: `class_name`,
//! `cmd_name`, `ctrl_class` ("NV2080"), `ctrl_class_name`, `ctrl_category`,
//! `ctrl_category_name`, `ctrl_interface`, `function_name`, …; `<key>_in` keeps
//! the entry value of an in/out field the driver changed; `struct` names the C
//! type decoded. Handles, ids, flags and pointers are hex strings; sizes and
//! counts are numbers; unknown ids keep their hex value with a null name.

// The collector uses this API piece by piece; not every item has a caller yet.

mod classes;
mod controls;
mod escapes;
mod layout;
mod request;
mod status;
mod uvm;

#[cfg(test)]
mod tests;

use serde_json::{Map, Value, json};

// The public API, re-exported flat; callers pick what they need.
pub use classes::{class_name, classes};
pub use controls::{ControlRoute, control_name, control_route, controls};
pub use escapes::{escape_status_offset, vid_heap_function_name};
pub use request::{
    Ioc, NV_ABSOLUTE_MAX_IOCTL_SIZE, NV_ESC_IOCTL_XFER_CMD, NV_ESC_RM_ALLOC, NV_ESC_RM_CONTROL, NV_IOCTL_BASE,
    NV_IOCTL_MAGIC, escape_name, escape_names, ioc, nv_request, xfer_inner,
};
pub use status::{nv_status_description, nv_status_name, nv_statuses};
pub use uvm::{UvmRoute, uvm_ioctls, uvm_name, uvm_param_size, uvm_route, uvm_status_offset};

use escapes::Body;
use layout::{Ctx, View, hex};

/// The most bytes the eBPF side copies from one parameter pointer.
pub const MAX_PARAM_COPY: usize = 4096;

/// Which NVIDIA device file an fd refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// /dev/nvidiactl (minor 255).
    Ctl,
    /// /dev/nvidiaN, with its minor number N.
    Gpu(u32),
    /// /dev/nvidia-uvm.
    Uvm,
    /// /dev/nvidia-uvm-tools.
    UvmTools,
    /// Anything else (/dev/nvidia-modeset, /dev/nvidia-caps/…, …).
    Other,
}

impl Device {
    /// The device file's name: "nvidiactl", "nvidia0", "nvidia-uvm", "nvidia-uvm-tools", "other".
    pub fn label(&self) -> String {
        match self {
            Device::Ctl => "nvidiactl".into(),
            Device::Gpu(n) => format!("nvidia{n}"),
            Device::Uvm => "nvidia-uvm".into(),
            Device::UvmTools => "nvidia-uvm-tools".into(),
            Device::Other => "other".into(),
        }
    }
}

/// The device a path names: /dev/nvidiactl, /dev/nvidia<digits>,
/// /dev/nvidia-uvm, /dev/nvidia-uvm-tools; anything else is `Other`.
pub fn device_from_path(path: &str) -> Device {
    let Some(name) = path.strip_prefix("/dev/") else { return Device::Other };
    match name {
        "nvidiactl" => Device::Ctl,
        "nvidia-uvm" => Device::Uvm,
        "nvidia-uvm-tools" => Device::UvmTools,
        _ => name
            .strip_prefix("nvidia")
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse().ok())
            .map_or(Device::Other, Device::Gpu),
    }
}

/// How many bytes the eBPF side should copy from the request's argument
/// pointer, at entry and at exit: `_IOC_SIZE` for the frontend, the UVM table's
/// struct size for UVM (0 for unknown commands and for `Other`), capped at
/// [`MAX_PARAM_COPY`].
pub fn param_size(device: Device, request: u64) -> usize {
    let size = match device {
        Device::Ctl | Device::Gpu(_) => ioc(request).size as usize,
        Device::Uvm | Device::UvmTools => uvm::lookup(request).map_or(0, |e| e.size),
        Device::Other => 0,
    };
    size.min(MAX_PARAM_COPY)
}

/// For a parameter struct larger than [`MAX_PARAM_COPY`], a second window
/// `(offset, len)` worth copying: the fields past the cap and the NV status.
/// Only UVM_MAP_EXTERNAL_ALLOCATION (9240, 24) and UVM_ALLOC_SEMAPHORE_POOL
/// (9232, 16) have one.
pub fn param_tail(device: Device, request: u64) -> Option<(usize, usize)> {
    match device {
        Device::Uvm | Device::UvmTools => uvm::tail_window(uvm::lookup(request)?, MAX_PARAM_COPY),
        _ => None,
    }
}

/// Offset of the NV status (`status`/`rmStatus`) in the request's parameter
/// struct, when it has one. For XFER this is `None`: use
/// [`escape_status_offset`] with the inner escape and size from [`xfer_inner`].
pub fn status_offset(device: Device, request: u64) -> Option<usize> {
    match device {
        Device::Ctl | Device::Gpu(_) => {
            let i = ioc(request);
            escape_status_offset(i.nr, i.size)
        }
        Device::Uvm | Device::UvmTools => uvm_status_offset(request),
        Device::Other => None,
    }
}

/// How many bytes of an XFER's inner struct to copy, for an inner `size`.
pub fn xfer_copy_len(inner_size: u32) -> usize {
    (inner_size as usize).min(MAX_PARAM_COPY)
}

/// One decoded ioctl.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    pub device: Device,
    /// The request as recorded (only its low 32 bits reach the driver).
    pub request: u64,
    /// "RM_CONTROL", "CARD_INFO", "UVM_MAP_EXTERNAL_ALLOCATION", … (for XFER, the
    /// inner escape, with `xfer: true` in the fields); `None` when unknown.
    pub escape: Option<&'static str>,
    /// The escape number (`_IOC_NR`, or XFER's inner `cmd`), or the UVM command.
    pub nr: u32,
    /// The parameter struct's size: `_IOC_SIZE`, XFER's inner `size`, or the UVM table's.
    pub size: u32,
    /// Whether the escape / UVM command is known. (Unknown control commands and
    /// classes inside a known escape leave this true and get a null name.)
    pub known: bool,
    pub fields: Map<String, Value>,
    /// The NV_STATUS the driver wrote back (from the exit bytes; from the entry
    /// bytes when there is no exit capture, then `fields.status_from = "entry"`).
    pub nv_status: Option<u32>,
    pub nv_status_name: Option<&'static str>,
    /// `-ret` when the syscall returned -errno.
    pub errno: Option<i32>,
    /// Some field or the status lay beyond the bytes captured.
    pub truncated: bool,
}

impl Decoded {
    fn new(device: Device, request: u64) -> Self {
        Decoded {
            device,
            request,
            escape: None,
            nr: 0,
            size: 0,
            known: false,
            fields: Map::new(),
            nv_status: None,
            nv_status_name: None,
            errno: None,
            truncated: false,
        }
    }

    /// The decode as one JSON object (ids and the status as hex strings).
    pub fn to_json(&self) -> Value {
        json!({
            "device": self.device.label(),
            "request": format!("{:#x}", self.request),
            "escape": self.escape,
            "nr": self.nr,
            "size": self.size,
            "known": self.known,
            "fields": self.fields,
            "nv_status": self.nv_status.map(|s| format!("{s:#x}")),
            "nv_status_name": self.nv_status_name,
            "errno": self.errno,
            "truncated": self.truncated,
        })
    }
}

/// Decodes one ioctl: `entry` is the parameter bytes captured at syscall entry,
/// `exit` those captured at exit (if any), `ret` the syscall's return value.
/// Never panics; short buffers decode what is there and set `truncated`.
pub fn decode(device: Device, request: u64, entry: &[u8], exit: Option<&[u8]>, ret: Option<i64>) -> Decoded {
    decode_with_tail(device, request, entry, exit, ret, None, None)
}

/// [`decode`], plus the bytes of the [`param_tail`] window captured at entry and at exit.
pub fn decode_with_tail(
    device: Device,
    request: u64,
    entry: &[u8],
    exit: Option<&[u8]>,
    ret: Option<i64>,
    entry_tail: Option<&[u8]>,
    exit_tail: Option<&[u8]>,
) -> Decoded {
    let mut d = Decoded::new(device, request);
    d.errno = ret.filter(|r| (-4095..0).contains(r)).map(|r| (-r) as i32);
    let tail_off = param_tail(device, request).map(|(off, _)| off);
    let entry = View::new(entry, tail_off.zip(entry_tail));
    let exit = exit.map(|x| View::new(x, tail_off.zip(exit_tail)));
    let mut ctx = Ctx::new(entry, exit);
    match device {
        Device::Ctl | Device::Gpu(_) => decode_frontend(&mut d, &mut ctx, request),
        Device::Uvm | Device::UvmTools => decode_uvm(&mut d, &mut ctx, device, request),
        Device::Other => {
            let i = ioc(request);
            d.nr = i.nr;
            d.size = i.size;
            ctx.set("ioc_dir", i.dir);
            ctx.set("ioc_type", hex(i.ty.into()));
        }
    }
    d.nv_status_name = d.nv_status.and_then(nv_status_name);
    d.fields = ctx.fields;
    d.truncated = ctx.truncated;
    d
}

fn decode_frontend(d: &mut Decoded, ctx: &mut Ctx<'_>, request: u64) {
    let i = ioc(request);
    d.nr = i.nr;
    d.size = i.size;
    if i.ty != NV_IOCTL_MAGIC {
        ctx.set("ioc_type", hex(i.ty.into()));
    }
    if i.nr != NV_ESC_IOCTL_XFER_CMD {
        decode_escape(d, ctx, i.nr, i.size);
        return;
    }
    d.escape = escape_name(i.nr);
    d.known = true;
    if i.size != request::NV_IOCTL_XFER_SIZE {
        // nv.c answers -EINVAL without reading anything.
        ctx.set("size_mismatch", true);
        ctx.set("expected_size", request::NV_IOCTL_XFER_SIZE);
        return;
    }
    let (Some(cmd), Some(size), Some(ptr)) = (ctx.entry_u32(0), ctx.entry_u32(4), ctx.entry_u64(8)) else {
        return;
    };
    ctx.set("xfer", true);
    ctx.set("xfer_size", size);
    ctx.set("xfer_ptr", hex(ptr));
    if size > NV_ABSOLUTE_MAX_IOCTL_SIZE {
        ctx.set("xfer_size_too_large", true);
    }
    d.nr = cmd;
    d.size = size;
    if cmd == NV_ESC_IOCTL_XFER_CMD {
        ctx.set("nested_xfer", true);
        return;
    }
    ctx.entry = ctx.entry.skip(16);
    ctx.exit = ctx.exit.map(|x| x.skip(16));
    decode_escape(d, ctx, cmd, size);
}

fn decode_escape(d: &mut Decoded, ctx: &mut Ctx<'_>, nr: u32, size: u32) {
    d.escape = escape_name(nr);
    d.known = d.escape.is_some();
    match escapes::body(nr) {
        Body::Fixed(ls) => {
            let Some((l, matched)) = escapes::pick_layout(ls, size) else { return };
            ctx.set("struct", l.strukt);
            if !matched {
                ctx.set("size_mismatch", true);
                ctx.set("expected_size", l.size);
            }
            ctx.apply(l.fields);
            escapes::extras(nr, l, ctx);
            if let Some(off) = l.status {
                d.nv_status = ctx.status(off);
            }
        }
        Body::CardInfo => escapes::card_info(size, ctx),
        Body::AttachGpus => escapes::attach_gpus(size, ctx),
        Body::Xfer => ctx.set("nested_xfer", true),
        Body::Opaque => {}
    }
}

fn decode_uvm(d: &mut Decoded, ctx: &mut Ctx<'_>, device: Device, request: u64) {
    d.nr = request as u32;
    let Some(e) = uvm::lookup(request) else {
        ctx.set("request", hex(request));
        return;
    };
    d.escape = Some(e.name);
    d.known = true;
    d.size = e.size as u32;
    let served = match e.route {
        UvmRoute::Main => device == Device::Uvm,
        UvmRoute::Tools => device == Device::UvmTools,
        UvmRoute::Unrouted => false,
    };
    if !served {
        ctx.set("unrouted", true);
    }
    uvm::decode_fields(e, ctx);
    if let Some(off) = e.status {
        d.nv_status = ctx.status(off);
    }
}
