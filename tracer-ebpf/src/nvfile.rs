//! NVIDIA device-file syscalls of the traced tree (the path that always
//! works, since it needs no kprobes): openat/close keep a (tgid, fd) ->
//! device map in the kernel, so ioctl/mmap on other files cost one lookup.
//! ioctl parameter structs are read at entry and again at exit (outputs and
//! the NV status the driver writes into them).
use aya_ebpf::{
    helpers::{bpf_probe_read_user, bpf_probe_read_user_str_bytes, generated::bpf_probe_read_user as raw_read_user},
    macros::{kprobe, kretprobe, map, tracepoint},
    maps::{HashMap, LruHashMap},
    programs::{ProbeContext, RetProbeContext, TracePointContext},
};
use tracer_common::event::{
    EventKind, IOCTL_CAP, IOCTL_HEAD_CAP, IOCTL_TAIL_CAP, IoctlEnter, IoctlExit, NvFileOp, UvmCapture, counter, nvdev,
    nvop,
};

use crate::maps::{EVENTS, bump, current, header, is_traced, submit_flags};

/// (tgid << 32 | fd) -> nvdev kind. LRU, so entries of processes whose
/// cleanup was missed can never block new ones; userspace removes a
/// process's entries when it exits or execs (O_CLOEXEC ones).
#[map]
pub static NVFDS: LruHashMap<u64, u32> = LruHashMap::with_max_entries(65536, 0);

/// UVM ioctl number -> how to capture its struct (UVM requests are plain
/// numbers, not _IOC-encoded; userspace fills this from its table).
#[map]
pub static UVM_SIZES: HashMap<u32, UvmCapture> = HashMap::with_max_entries(256, 0);

/// tid -> openat (filename pointer, flags), between enter and exit.
#[map]
static OPENING: HashMap<u32, [u64; 2]> = HashMap::with_max_entries(8192, 0);

#[derive(Clone, Copy)]
#[repr(C)]
pub struct InFlight {
    /// The ioctl's argument (the xfer header for XFER_CMD).
    arg: u64,
    /// Address re-read at exit (the inner struct for XFER_CMD).
    ptr: u64,
    len: u32,
    /// Bytes of the xfer header kept in front of the inner struct.
    prefix: u32,
    tail_off: u32,
    tail_len: u32,
}

/// tid -> the ioctl in progress.
#[map]
static IOCTLS: HashMap<u32, InFlight> = HashMap::with_max_entries(8192, 0);

#[derive(Clone, Copy)]
#[repr(C)]
pub struct MmapInFlight {
    fd: u32,
    dev: u32,
    length: u64,
    prot: u64,
    flags: u64,
    offset: u64,
}

#[map]
static MMAPS: HashMap<u32, MmapInFlight> = HashMap::with_max_entries(8192, 0);

/// (tgid, address) -> length of NVIDIA mappings, so munmap can be matched.
#[map]
static MAPPED: HashMap<[u64; 2], u64> = HashMap::with_max_entries(65536, 0);

// Syscall tracepoint layout (stable): args start at 16, 8 bytes each; the
// exit tracepoint's return value is at 16.
#[inline(always)]
fn arg(ctx: &TracePointContext, i: usize) -> u64 {
    unsafe { ctx.read_at::<u64>(16 + 8 * i) }.unwrap_or(0)
}

const NV_ESC_IOCTL_XFER_CMD: u64 = 0xd3;
const NV_IOCTL_MAGIC: u64 = 0x46; // 'F'

#[inline(always)]
fn fd_key(pid: u32, fd: u64) -> u64 {
    nvdev::fd_key(pid, fd as u32)
}

/// Copies up to `n` bytes from user `src` into `dst[OFF..]` (cut to the
/// room left). The offset is a constant so the verifier can bound the write.
#[inline(always)]
fn read_into<const OFF: usize>(dst: &mut [u8; IOCTL_CAP], src: u64, n: usize) -> bool {
    const { assert!(OFF < IOCTL_CAP) };
    let room = IOCTL_CAP - OFF;
    let n = if n > room { room } else { n };
    if n == 0 {
        return true;
    }
    // Pass the size through a volatile stack slot and bound it right before
    // the call: otherwise LLVM folds the clamps into a form the verifier
    // cannot follow ("R2 unbounded memory access").
    let slot = n as u32;
    let n = unsafe { core::ptr::read_volatile(&slot) };
    if n == 0 || n > (IOCTL_CAP - OFF) as u32 {
        return false;
    }
    let p = unsafe { dst.as_mut_ptr().add(OFF) };
    unsafe { raw_read_user(p as *mut _, n, src as *const _) == 0 }
}

/// Classifies an opened path: /dev/nvidiactl, /dev/nvidia-uvm(-tools), /dev/nvidiaN.
#[inline(always)]
fn classify(p: &[u8; 64]) -> u32 {
    const PFX: &[u8; 11] = b"/dev/nvidia";
    let mut i = 0;
    while i < 11 {
        if p[i] != PFX[i] {
            return nvdev::NONE;
        }
        i += 1;
    }
    if p[11] == b'c' && p[12] == b't' && p[13] == b'l' && p[14] == 0 {
        return nvdev::CTL;
    }
    if p[11] == b'-' && p[12] == b'u' && p[13] == b'v' && p[14] == b'm' {
        if p[15] == 0 {
            return nvdev::UVM;
        }
        if p[15] == b'-'
            && p[16] == b't'
            && p[17] == b'o'
            && p[18] == b'o'
            && p[19] == b'l'
            && p[20] == b's'
            && p[21] == 0
        {
            return nvdev::UVM_TOOLS;
        }
        return nvdev::NONE;
    }
    // /dev/nvidiaN, N up to 3 digits
    let mut minor: u32 = 0;
    let mut k = 11;
    while k < 14 {
        let c = p[k];
        if c == 0 {
            break;
        }
        if !c.is_ascii_digit() {
            return nvdev::NONE;
        }
        minor = minor * 10 + (c - b'0') as u32;
        k += 1;
    }
    if k == 11 || p[k] != 0 {
        return nvdev::NONE;
    }
    nvdev::GPU + minor
}

#[tracepoint]
pub fn nv_openat_enter(ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    if !is_traced(pid) {
        return 0;
    }
    let _ = OPENING.insert(&tid, &[arg(&ctx, 1), arg(&ctx, 2)], 0);
    0
}

#[tracepoint]
pub fn nv_openat_exit(ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    let Some(&[name, oflags]) = (unsafe { OPENING.get(&tid) }) else { return 0 };
    let _ = OPENING.remove(&tid);
    let ret = unsafe { ctx.read_at::<i64>(16) }.unwrap_or(-1);
    let mut path = [0u8; 64];
    if unsafe { bpf_probe_read_user_str_bytes(name as *const u8, &mut path) }.is_err() {
        return 0;
    }
    let dev = classify(&path);
    if dev == nvdev::NONE {
        // The fd number now names another file: whatever NVIDIA file it
        // named before (closed by exec's O_CLOEXEC, or without us seeing
        // it) is gone.
        if ret >= 0 {
            let _ = NVFDS.remove(&fd_key(pid, ret as u64));
        }
        return 0;
    }
    if ret >= 0 {
        let _ = NVFDS.insert(&fd_key(pid, ret as u64), &dev, 0);
    }
    emit_file(pid, tid, nvop::OPEN, ret as i32, dev, ret, 0, 0, 0, oflags, 0, Some(&path));
    0
}

#[tracepoint]
pub fn nv_close_enter(ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    if !is_traced(pid) {
        return 0;
    }
    let fd = arg(&ctx, 0);
    let key = fd_key(pid, fd);
    let Some(&dev) = (unsafe { NVFDS.get(&key) }) else { return 0 };
    let _ = NVFDS.remove(&key);
    emit_file(pid, tid, nvop::CLOSE, fd as i32, dev, 0, 0, 0, 0, 0, 0, None);
    0
}

/// dup2/dup3(oldfd, newfd): newfd is closed first if open, so it stops
/// being an NVIDIA fd (copies made by dup are not tracked).
#[tracepoint]
pub fn nv_dup_enter(ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    if !is_traced(pid) {
        return 0;
    }
    let newfd = arg(&ctx, 1);
    let key = fd_key(pid, newfd);
    let Some(&dev) = (unsafe { NVFDS.get(&key) }) else { return 0 };
    let _ = NVFDS.remove(&key);
    emit_file(pid, tid, nvop::CLOSE, newfd as i32, dev, 0, 0, 0, 0, 0, 0, None);
    0
}

#[tracepoint]
pub fn nv_ioctl_enter(ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    if !is_traced(pid) {
        return 0;
    }
    let fd = arg(&ctx, 0);
    let Some(&dev) = (unsafe { NVFDS.get(&fd_key(pid, fd)) }) else { return 0 };
    capture_ioctl(pid, tid, fd as u32, dev, arg(&ctx, 1), arg(&ctx, 2));
    0
}

/// The kprobe path: nvidia.ko's own ioctl entry points (nvidia_unlocked_ioctl,
/// uvm_unlocked_ioctl_entry), signature (struct file *, unsigned int cmd,
/// unsigned long arg). Only NVIDIA ioctls reach them, so no fd map is needed;
/// the fd is unknown here (u32::MAX).
#[kprobe]
pub fn nv_kp_frontend(ctx: ProbeContext) -> u32 {
    kprobe_ioctl(&ctx, nvdev::FRONTEND)
}

#[kprobe]
pub fn nv_kp_uvm(ctx: ProbeContext) -> u32 {
    kprobe_ioctl(&ctx, nvdev::UVM)
}

#[inline(always)]
fn kprobe_ioctl(ctx: &ProbeContext, dev: u32) -> u32 {
    let (pid, tid) = current();
    if !is_traced(pid) {
        return 0;
    }
    let cmd: u64 = ctx.arg::<u64>(1).unwrap_or(0) & 0xffff_ffff;
    let argp: u64 = ctx.arg(2).unwrap_or(0);
    capture_ioctl(pid, tid, u32::MAX, dev, cmd, argp);
    0
}

#[kretprobe]
pub fn nv_krp_ioctl(ctx: RetProbeContext) -> u32 {
    let (pid, tid) = current();
    let ret: i64 = ctx.ret();
    finish_ioctl(pid, tid, ret);
    0
}

#[inline(always)]
fn capture_ioctl(pid: u32, tid: u32, fd: u32, dev: u32, request: u64, argp: u64) {
    let hdr = header(EventKind::IoctlEnter as u16, 0, pid, tid);
    let Some(mut e) = EVENTS.reserve::<IoctlEnter>(0) else {
        bump(counter::RB_FULL);
        return;
    };
    let rec = unsafe { &mut *e.as_mut_ptr() };
    rec.hdr = hdr;
    rec.fd = fd;
    rec.dev = dev;
    rec.request = request;
    rec.arg = argp;
    rec.inner_nr = 0;
    rec.tail_len = 0;
    rec.inner_ptr = 0;
    rec.len = 0;
    let mut inflight = InFlight { arg: argp, ptr: argp, len: 0, prefix: 0, tail_off: 0, tail_len: 0 };
    let uvm = dev == nvdev::UVM || dev == nvdev::UVM_TOOLS;
    // Frontend request numbers carry their struct size; UVM ones do not.
    let mut cap = IOCTL_CAP;
    let size: u32 = if uvm {
        match unsafe { UVM_SIZES.get(&(request as u32)) } {
            Some(c) => {
                if c.tail_len > 0 {
                    // head + trailing window (rmStatus of the big structs)
                    cap = IOCTL_HEAD_CAP;
                    let tl = if c.tail_len as usize > IOCTL_TAIL_CAP { IOCTL_TAIL_CAP as u32 } else { c.tail_len };
                    if read_into::<IOCTL_HEAD_CAP>(&mut rec.data, argp + c.tail_off as u64, tl as usize) {
                        rec.tail_len = tl;
                        inflight.tail_off = c.tail_off;
                        inflight.tail_len = tl;
                    }
                }
                c.size
            }
            None => 0,
        }
    } else {
        ((request >> 16) & 0x3fff) as u32
    };
    rec.size = size;
    let nr = request & 0xff;
    if !uvm && nr == NV_ESC_IOCTL_XFER_CMD && size == 16 && (request >> 8) & 0xff == NV_IOCTL_MAGIC {
        // nv_ioctl_xfer_t { u32 cmd; u32 size; u64 ptr }: the real escape.
        if let Ok(x) = unsafe { bpf_probe_read_user(argp as *const [u64; 2]) } {
            rec.data[..16].copy_from_slice(&unsafe { core::mem::transmute::<[u64; 2], [u8; 16]>(x) });
            rec.inner_nr = x[0] as u32;
            rec.inner_ptr = x[1];
            rec.size = (x[0] >> 32) as u32;
            rec.len = 16;
            let inner = (x[0] >> 32) as usize;
            if read_into::<16>(&mut rec.data, x[1], inner) {
                let got = if inner > IOCTL_CAP - 16 { IOCTL_CAP - 16 } else { inner };
                rec.len = 16 + got as u32;
                inflight = InFlight { arg: argp, ptr: x[1], len: got as u32, prefix: 16, tail_off: 0, tail_len: 0 };
            }
        }
    } else {
        let got = if size as usize > cap { cap as u32 } else { size };
        if read_into::<0>(&mut rec.data, argp, got as usize) {
            rec.len = got;
            inflight.len = got;
        }
    }
    e.submit(submit_flags());
    let _ = IOCTLS.insert(&tid, &inflight, 0);
}

#[tracepoint]
pub fn nv_ioctl_exit(ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    finish_ioctl(pid, tid, unsafe { ctx.read_at::<i64>(16) }.unwrap_or(0));
    0
}

#[inline(always)]
fn finish_ioctl(pid: u32, tid: u32, ret: i64) {
    let Some(&f) = (unsafe { IOCTLS.get(&tid) }) else { return };
    let _ = IOCTLS.remove(&tid);
    let hdr = header(EventKind::IoctlExit as u16, 0, pid, tid);
    let Some(mut e) = EVENTS.reserve::<IoctlExit>(0) else {
        bump(counter::RB_FULL);
        return;
    };
    let rec = unsafe { &mut *e.as_mut_ptr() };
    rec.hdr = hdr;
    rec.ret = ret;
    rec.tail_len = 0;
    rec.len = 0;
    // Same layout as at entry: xfer header, then the (inner) struct.
    let ok = if f.prefix == 16 {
        read_into::<0>(&mut rec.data, f.arg, 16) && read_into::<16>(&mut rec.data, f.ptr, f.len as usize)
    } else {
        read_into::<0>(&mut rec.data, f.ptr, f.len as usize)
    };
    if ok {
        rec.len = f.prefix + f.len;
    }
    if f.tail_len > 0 && read_into::<IOCTL_HEAD_CAP>(&mut rec.data, f.ptr + f.tail_off as u64, f.tail_len as usize) {
        rec.tail_len = f.tail_len;
    }
    e.submit(submit_flags());
}

#[tracepoint]
pub fn nv_mmap_enter(ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    if !is_traced(pid) {
        return 0;
    }
    let fd = arg(&ctx, 4);
    let Some(&dev) = (unsafe { NVFDS.get(&fd_key(pid, fd)) }) else { return 0 };
    let m = MmapInFlight {
        fd: fd as u32,
        dev,
        length: arg(&ctx, 1),
        prot: arg(&ctx, 2),
        flags: arg(&ctx, 3),
        offset: arg(&ctx, 5),
    };
    let _ = MMAPS.insert(&tid, &m, 0);
    0
}

#[tracepoint]
pub fn nv_mmap_exit(ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    let Some(&m) = (unsafe { MMAPS.get(&tid) }) else { return 0 };
    let _ = MMAPS.remove(&tid);
    let ret = unsafe { ctx.read_at::<i64>(16) }.unwrap_or(-1);
    if !(-4095..0).contains(&ret) {
        let _ = MAPPED.insert(&[pid as u64, ret as u64], &m.length, 0);
    }
    emit_file(
        pid,
        tid,
        nvop::MMAP,
        m.fd as i32,
        m.dev,
        ret,
        ret as u64,
        m.length,
        m.prot as u32,
        m.flags,
        m.offset,
        None,
    );
    0
}

#[tracepoint]
pub fn nv_munmap_enter(ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    if !is_traced(pid) {
        return 0;
    }
    let addr = arg(&ctx, 0);
    let key = [pid as u64, addr];
    if unsafe { MAPPED.get(&key) }.is_none() {
        return 0;
    }
    let _ = MAPPED.remove(&key);
    emit_file(pid, tid, nvop::MUNMAP, -1, 0, 0, addr, arg(&ctx, 1), 0, 0, 0, None);
    0
}

#[allow(clippy::too_many_arguments, reason = "the fields of one nvidia_fd record, written in place")]
#[inline(always)]
fn emit_file(
    pid: u32,
    tid: u32,
    op: u32,
    fd: i32,
    dev: u32,
    ret: i64,
    addr: u64,
    length: u64,
    prot: u32,
    flags: u64,
    offset: u64,
    path: Option<&[u8; 64]>,
) {
    let hdr = header(EventKind::NvFileOp as u16, 0, pid, tid);
    match EVENTS.reserve::<NvFileOp>(0) {
        Some(mut e) => {
            let rec = unsafe { &mut *e.as_mut_ptr() };
            *rec = NvFileOp { hdr, op, fd, dev, prot, ret, addr, length, flags, offset, path: [0; 64] };
            if let Some(p) = path {
                rec.path = *p;
            }
            e.submit(submit_flags());
        }
        None => {
            bump(counter::RB_FULL);
        }
    }
}
