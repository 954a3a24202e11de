//! Late libcuda mappings: a watched process (select.rs) that opens a file
//! named `libcuda.so*` as the dynamic loader does (O_RDONLY|O_CLOEXEC,
//! right before it maps the library) is stopped with SIGSTOP as the openat returns, and
//! the open goes to userspace on `LIBOPENS`. Userspace attaches the probes
//! to the file (`/proc/PID/fd/FD`, whatever mount namespace it lives in) if
//! its inode is new, then sends SIGCONT: the process cannot run an
//! instruction of the library before its probes are in place.
use aya_ebpf::{
    helpers::{bpf_probe_read_user_str_bytes, generated::bpf_send_signal},
    macros::{map, tracepoint},
    maps::{HashMap, PerCpuArray, RingBuf},
    programs::TracePointContext,
};
use tracer_common::libopen::{LIBCUDA_PREFIX, LIBOPENS_BYTES, LibOpen};

use crate::maps::current;
use crate::select::watched;

/// Opens of libcuda files, for userspace (always woken).
#[map]
pub static LIBOPENS: RingBuf = RingBuf::with_byte_size(LIBOPENS_BYTES, 0);

/// Opens that could not be reported (LIBOPENS full): the process was not
/// stopped and its library may be probed late or never. Per CPU, slot 0.
#[map]
pub static LIBOPEN_LOST: PerCpuArray<u64> = PerCpuArray::with_max_entries(1, 0);

/// tid -> 1 between the enter and exit of an openat of a libcuda file.
#[map]
static LIB_OPENING: HashMap<u32, u8> = HashMap::with_max_entries(4096, 0);

const NAME_CAP: usize = 256;

/// Scratch for the file name (too big for the stack next to the rest).
#[map]
static NAME_BUF: PerCpuArray<[u8; NAME_CAP]> = PerCpuArray::with_max_entries(1, 0);

const O_ACCMODE: u64 = 0o3;
const O_CREAT: u64 = 0o100;
const O_PATH: u64 = 0o10000000;
const O_CLOEXEC: u64 = 0o2000000;
const SIGSTOP: u32 = 19;
const BPF_RB_FORCE_WAKEUP: u64 = 2;

// Syscall tracepoint layout: args start at 16, 8 bytes each; the exit
// tracepoint's return value is at 16.
#[inline(always)]
fn arg(ctx: &TracePointContext, i: usize) -> u64 {
    unsafe { ctx.read_at::<u64>(16 + 8 * i) }.unwrap_or(0)
}

/// Whether the path's last component starts with `libcuda.so`. Scans back
/// from the end for the last `/` (a forward scan that remembers the last
/// slash seen makes the verifier walk every combination and gives up).
#[inline(always)]
fn is_libcuda(buf: &[u8; NAME_CAP], len: usize) -> bool {
    let p = buf.as_ptr();
    let mut i = if len > NAME_CAP { NAME_CAP } else { len };
    let mut start = 0usize;
    for _ in 0..NAME_CAP {
        if i == 0 {
            break;
        }
        i -= 1;
        // Through a volatile read, so that LLVM cannot fold the mask into
        // the pointer (`p - 1 + i`), which Linux 6.1's verifier refuses.
        let j = unsafe { core::ptr::read_volatile(&i) } & (NAME_CAP - 1);
        // SAFETY: masked into the buffer.
        if unsafe { *p.add(j) } == b'/' {
            start = i + 1;
            break;
        }
    }
    if start + LIBCUDA_PREFIX.len() > len {
        return false;
    }
    let mut k = 0usize;
    while k < LIBCUDA_PREFIX.len() {
        // SAFETY: masked into the buffer.
        if unsafe { *p.add((start + k) & (NAME_CAP - 1)) } != LIBCUDA_PREFIX[k] {
            return false;
        }
        k += 1;
    }
    true
}

#[tracepoint]
pub fn lib_openat_enter(ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    if !watched(pid) {
        return 0;
    }
    // The dynamic loader's opens only (O_RDONLY|O_CLOEXEC): not a copy
    // being written, nor a plain reader such as cp or ldconfig.
    let flags = arg(&ctx, 2);
    if flags & (O_ACCMODE | O_CREAT | O_PATH) != 0 || flags & O_CLOEXEC == 0 {
        return 0;
    }
    let Some(buf) = NAME_BUF.get_ptr_mut(0) else { return 0 };
    let buf = unsafe { &mut *buf };
    let len = match unsafe { bpf_probe_read_user_str_bytes(arg(&ctx, 1) as *const u8, buf) } {
        Ok(s) => s.len(),
        Err(_) => return 0,
    };
    if is_libcuda(buf, len) {
        let _ = LIB_OPENING.insert(&tid, &1, 0);
    }
    0
}

#[tracepoint]
pub fn lib_openat_exit(ctx: TracePointContext) -> u32 {
    let (pid, tid) = current();
    if unsafe { LIB_OPENING.get(&tid) }.is_none() {
        return 0;
    }
    let _ = LIB_OPENING.remove(&tid);
    let ret = unsafe { ctx.read_at::<i64>(16) }.unwrap_or(-1);
    if ret < 0 {
        return 0;
    }
    // Reserve before stopping: a process is never stopped without userspace
    // being told to continue it.
    match LIBOPENS.reserve::<LibOpen>(0) {
        Some(mut e) => {
            // The stop takes effect as the syscall returns to user mode.
            let stopped = unsafe { bpf_send_signal(SIGSTOP) } == 0;
            let rec = unsafe { &mut *e.as_mut_ptr() };
            rec.ts = unsafe { aya_ebpf::helpers::bpf_ktime_get_ns() };
            rec.pid = pid;
            rec.tid = tid;
            rec.fd = ret as u32;
            rec.stopped = stopped as u32;
            e.submit(BPF_RB_FORCE_WAKEUP);
        }
        None => {
            if let Some(p) = LIBOPEN_LOST.get_ptr_mut(0) {
                unsafe { *p += 1 };
            }
        }
    }
    0
}
