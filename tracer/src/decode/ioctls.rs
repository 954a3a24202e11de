//! NVIDIA device-file events into trace lines: each ioctl's entry and exit
//! are paired per thread, decoded by [`crate::decode::nvioctl`], and attributed to
//! the CUDA driver call in progress on that thread. Pure: no I/O.
use std::collections::HashMap;

use serde_json::{Map, Value, json};
use tracer_common::event::{IoctlEnter, IoctlExit, NvFileOp, nvdev, nvop};

use crate::decode::args::hex;
use crate::decode::event_line::base;
use crate::decode::nvioctl::{self, Device};

pub fn device(dev: u32) -> Device {
    match dev {
        // The kprobe path does not know which frontend file; both decode alike.
        nvdev::CTL | nvdev::FRONTEND => Device::Ctl,
        nvdev::UVM => Device::Uvm,
        nvdev::UVM_TOOLS => Device::UvmTools,
        d if d >= nvdev::GPU => Device::Gpu(d - nvdev::GPU),
        _ => Device::Other,
    }
}

/// The kernel side's device kind for a decoder device (None: not NVIDIA's).
pub fn nvdev_of(d: Device) -> Option<u32> {
    match d {
        Device::Ctl => Some(nvdev::CTL),
        Device::Uvm => Some(nvdev::UVM),
        Device::UvmTools => Some(nvdev::UVM_TOOLS),
        Device::Gpu(n) => Some(nvdev::GPU + n),
        Device::Other => None,
    }
}

pub fn device_path(dev: u32) -> String {
    if dev == nvdev::FRONTEND {
        return "/dev/nvidia* (frontend)".to_string();
    }
    match device(dev) {
        Device::Other => "other".to_string(),
        d => format!("/dev/{}", d.label()),
    }
}

/// The largest parameter struct laid out as head + tail window (the UVM
/// structs with a tail are about 4 KiB).
const MAX_LAID_OUT_STRUCT: u32 = 64 << 10;

struct Pending {
    r: IoctlEnter,
    data: Vec<u8>,
    tail: Vec<u8>,
    cuda_call: Option<(String, u64)>,
}

/// Which kernel path delivered the events ("tracepoint" or "kprobe").
#[derive(Default)]
pub struct Ioctls {
    pending: HashMap<u32, Pending>,
    pub path: &'static str,
}

fn errno_name(e: i32) -> String {
    let name = match e {
        1 => "EPERM",
        2 => "ENOENT",
        5 => "EIO",
        9 => "EBADF",
        11 => "EAGAIN",
        12 => "ENOMEM",
        13 => "EACCES",
        14 => "EFAULT",
        16 => "EBUSY",
        19 => "ENODEV",
        22 => "EINVAL",
        25 => "ENOTTY",
        28 => "ENOSPC",
        38 => "ENOSYS",
        95 => "EOPNOTSUPP",
        110 => "ETIMEDOUT",
        // kernel-internal: a driver's "not my ioctl", seen by kretprobes
        // (the syscall then returns ENOTTY)
        515 => "ENOIOCTLCMD",
        _ => return format!("errno {e}"),
    };
    name.to_string()
}

impl Ioctls {
    pub fn new(path: &'static str) -> Self {
        Ioctls { pending: HashMap::new(), path }
    }

    pub fn enter(&mut self, r: &IoctlEnter, data: &[u8], tail: &[u8], cuda_call: Option<(String, u64)>) {
        self.pending.insert(r.hdr.tid, Pending { r: *r, data: data.to_vec(), tail: tail.to_vec(), cuda_call });
    }

    /// The completed line, or an exit-only line when the entry was lost.
    pub fn exit(&mut self, x: &IoctlExit, data: &[u8], tail: &[u8]) -> Value {
        match self.pending.remove(&x.hdr.tid) {
            Some(p) => self.line(&p, Some((x, data, tail))),
            None => {
                let mut m = base(&x.hdr, "ioctl", "ioctl", "UNKNOWN");
                m.insert("ret".into(), json!(x.ret));
                m.insert("entry_lost".into(), json!(true));
                Value::Object(m)
            }
        }
    }

    /// Lines for ioctls that never returned (trace ended, thread died).
    pub fn finish_thread(&mut self, tid: u32) -> Option<Value> {
        self.pending.remove(&tid).map(|p| self.line(&p, None))
    }

    pub fn finish(&mut self) -> Vec<Value> {
        let mut tids: Vec<u32> = self.pending.keys().copied().collect();
        tids.sort_unstable();
        tids.into_iter().filter_map(|t| self.finish_thread(t)).collect()
    }

    fn line(&self, p: &Pending, exit: Option<(&IoctlExit, &[u8], &[u8])>) -> Value {
        let r = &p.r;
        let dev = device(r.dev);
        let ret = exit.map(|(x, _, _)| x.ret);
        // A struct captured as head + trailing window: lay both out at their
        // offsets (the gap, unused per-GPU array slots, reads as zeros).
        // A size no real struct has (the record is corrupt) gets no layout:
        // the head alone is decoded, and memory stays bounded.
        let (entry, exit_bytes) = if p.tail.is_empty() || r.size > MAX_LAID_OUT_STRUCT {
            (p.data.clone(), exit.map(|(_, d, _)| d.to_vec()))
        } else {
            let (off, _) = uvm_tail(r.size);
            let full = |head: &[u8], tail: &[u8]| {
                let mut v = vec![0u8; r.size as usize];
                let h = head.len().min(v.len());
                v[..h].copy_from_slice(&head[..h]);
                let o = (off as usize).min(v.len());
                let n = tail.len().min(v.len() - o);
                v[o..o + n].copy_from_slice(&tail[..n]);
                v
            };
            (full(&p.data, &p.tail), exit.map(|(_, d, t)| full(d, t)))
        };
        let d = nvioctl::decode(dev, r.request, &entry, exit_bytes.as_deref(), ret);
        let name = d.escape.unwrap_or("UNKNOWN");
        let mut m = base(&r.hdr, "ioctl", "ioctl", name);
        m.insert("device".into(), json!(device_path(r.dev)));
        m.insert("fd".into(), json!(r.fd));
        m.insert("request".into(), hex(r.request));
        m.insert("nr".into(), hex(d.nr as u64));
        m.insert("size".into(), json!(d.size));
        m.insert("known".into(), json!(d.known));
        if r.inner_nr != 0 {
            m.insert("xfer".into(), json!(true));
        }
        match exit {
            Some((x, _, _)) => {
                m.insert("ret".into(), json!(x.ret));
                if let Some(e) = d.errno {
                    m.insert("errno".into(), json!(errno_name(e)));
                }
                m.insert("duration_us".into(), json!(x.hdr.ts.saturating_sub(r.hdr.ts) as f64 / 1000.0));
                m.insert("exit_cpu".into(), json!(x.hdr.cpu));
                m.insert("exit_seq".into(), json!(x.hdr.seq));
            }
            None => {
                m.insert("incomplete".into(), json!(true));
            }
        }
        if let Some(s) = d.nv_status {
            m.insert("status".into(), json!(s));
            m.insert(
                "status_name".into(),
                json!(d.nv_status_name.map_or_else(|| format!("NV_STATUS({s:#x})"), str::to_string)),
            );
        }
        if d.truncated {
            m.insert("truncated".into(), json!(true));
        }
        put_call(&mut m, p.cuda_call.clone());
        m.insert("fields".into(), Value::Object(d.fields));
        m.insert("ioctl_path".into(), json!(self.path));
        Value::Object(m)
    }
}

/// A line for open/close/mmap/munmap of an NVIDIA device file.
pub fn file_line(r: &NvFileOp, path: &[u8], cuda_call: Option<(String, u64)>) -> Value {
    let op = match r.op {
        nvop::OPEN => "open",
        nvop::CLOSE => "close",
        nvop::MMAP => "mmap",
        nvop::MUNMAP => "munmap",
        _ => "unknown",
    };
    let mut m = base(&r.hdr, "nvidia_fd", op, op);
    let path = if path.is_empty() { device_path(r.dev) } else { String::from_utf8_lossy(path).into_owned() };
    if r.op != nvop::MUNMAP {
        m.insert("path".into(), json!(path));
        m.insert("fd".into(), json!(r.fd));
    }
    match r.op {
        nvop::OPEN => {
            m.insert("ret".into(), json!(r.ret));
            m.insert("flags".into(), hex(r.flags));
            // A failed syscall returns -errno (-4095..-1); anything lower is not an errno.
            if (-4095..0).contains(&r.ret) {
                m.insert("errno".into(), json!(errno_name(-r.ret as i32)));
            }
        }
        nvop::MMAP => {
            if (-4095..0).contains(&r.ret) {
                m.insert("ret".into(), json!(r.ret));
                m.insert("errno".into(), json!(errno_name(-r.ret as i32)));
            } else {
                m.insert("addr".into(), hex(r.addr));
            }
            m.insert("length".into(), json!(r.length));
            m.insert("prot".into(), hex(r.prot as u64));
            m.insert("flags".into(), hex(r.flags));
            m.insert("offset".into(), hex(r.offset));
        }
        nvop::MUNMAP => {
            m.insert("addr".into(), hex(r.addr));
            m.insert("length".into(), json!(r.length));
        }
        _ => {}
    }
    put_call(&mut m, cuda_call);
    Value::Object(m)
}

/// `cuda_call`: the driver call in progress on the thread (null if none);
/// `cuda_call_ts`: that call's `ts`, so (tid, cuda_call_ts) finds its line.
fn put_call(m: &mut Map<String, Value>, call: Option<(String, u64)>) {
    match call {
        Some((name, ts)) => {
            m.insert("cuda_call".into(), json!(name));
            m.insert("cuda_call_ts".into(), json!(ts));
        }
        None => {
            m.insert("cuda_call".into(), Value::Null);
        }
    }
}

/// For a UVM struct larger than the captured head, the trailing window
/// captured as well: (offset, length), else (0, 0). The trailing fields of
/// the large UVM structs (gpuAttributesCount, hClient, hMemory, rmStatus)
/// follow their per-GPU arrays.
pub fn uvm_tail(size: u32) -> (u32, u32) {
    if size as usize <= tracer_common::event::IOCTL_HEAD_CAP {
        return (0, 0);
    }
    let start = size
        .saturating_sub(tracer_common::event::IOCTL_TAIL_CAP as u32)
        .max(tracer_common::event::IOCTL_HEAD_CAP as u32);
    (start, size - start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracer_common::event::{EventKind, Header, IOCTL_CAP};

    fn hdr(kind: EventKind, ts: u64) -> Header {
        Header { kind: kind as u16, func: 0, cpu: 0, seq: ts, ts, pid: 7, tid: 8 }
    }

    #[test]
    fn rm_alloc_decoded_with_status_from_exit_and_attributed() {
        // NVOS21: hRoot, hObjectParent, hObjectNew, hClass, pAllocParms, paramsSize, status @28
        let mut entry = vec![0u8; 32];
        entry[0..4].copy_from_slice(&0xc1d0_0001u32.to_le_bytes());
        entry[4..8].copy_from_slice(&0xc1d0_0001u32.to_le_bytes());
        entry[8..12].copy_from_slice(&0xcafe_0002u32.to_le_bytes());
        entry[12..16].copy_from_slice(&0x40u32.to_le_bytes()); // NV01_MEMORY_LOCAL_USER
        let mut exit = entry.clone();
        exit[28..32].copy_from_slice(&0u32.to_le_bytes());
        entry[28..32].copy_from_slice(&0xffff_ffffu32.to_le_bytes());
        let request = 0xc020_462b; // _IOWR('F', 0x2b, 32)
        let e = IoctlEnter {
            hdr: hdr(EventKind::IoctlEnter, 100),
            fd: 3,
            dev: nvdev::CTL,
            request,
            arg: 0x1000,
            size: 32,
            len: 32,
            inner_nr: 0,
            tail_len: 0,
            inner_ptr: 0,
            data: [0; IOCTL_CAP],
        };
        let x = IoctlExit { hdr: hdr(EventKind::IoctlExit, 350), ret: 0, len: 32, tail_len: 0, data: [0; IOCTL_CAP] };
        let mut io = Ioctls::new("tracepoint");
        io.enter(&e, &entry, &[], Some(("cuMemAlloc_v2".into(), 90)));
        let v = io.exit(&x, &exit, &[]);
        assert_eq!(v["name"], "RM_ALLOC");
        assert_eq!(v["device"], "/dev/nvidiactl");
        assert_eq!(v["cuda_call"], "cuMemAlloc_v2");
        assert_eq!(v["cuda_call_ts"], 90);
        assert_eq!(v["status"], 0);
        assert_eq!(v["status_name"], "NV_OK");
        assert_eq!(v["duration_us"], 0.25);
        assert_eq!(v["fields"]["class_name"], "NV01_MEMORY_LOCAL_USER");
        assert_eq!(v["request"], "0xc020462b");
        // exit without entry
        let v = io.exit(&x, &exit, &[]);
        assert_eq!(v["entry_lost"], true);
    }

    #[test]
    fn file_lines() {
        let r = NvFileOp {
            hdr: hdr(EventKind::NvFileOp, 1),
            op: nvop::MMAP,
            fd: 5,
            dev: nvdev::GPU,
            prot: 3,
            ret: 0x7f00_0000_0000,
            addr: 0x7f00_0000_0000,
            length: 4096,
            flags: 1,
            offset: 0,
            path: [0; 64],
        };
        let v = file_line(&r, b"", None);
        assert_eq!(
            (v["op"].as_str(), v["path"].as_str(), v["addr"].as_str()),
            (Some("mmap"), Some("/dev/nvidia0"), Some("0x7f0000000000"))
        );
        assert_eq!(errno_name(22), "EINVAL");
    }
}
