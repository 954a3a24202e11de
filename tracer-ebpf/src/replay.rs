//! `--replayable`: the maps that tie kernel handles to parameter layouts,
//! the copy of a launch's parameter bytes (`capture`, for the launch
//! program of launch.rs and graph_params.rs), and the return-probe work
//! that keeps the maps current (tracer-common/src/params.rs describes the
//! chain). None of this runs in a normal recording: the maps
//! stay at one entry, the launch program is not attached and the cookie
//! bits that select the rest are not set.
use aya_ebpf::{
    bindings::BPF_F_NO_PREALLOC,
    helpers::{
        bpf_probe_read_user_str_bytes,
        generated::{bpf_probe_read_kernel, bpf_probe_read_user, bpf_send_signal_thread},
    },
    macros::map,
    maps::{Array, HashMap, PerCpuArray},
};
use tracer_common::{
    cookie::{Cookie, role},
    event::{MAX_ARGS, counter},
    params::{LaunchParams, Layout, MAX_PARAMS, NAME_CAP, PARAMS_CAP, key_end, key_start, key_word, status},
};

use crate::maps::{bump, submit_flags};

/// Layout id -> layout (an array: the lookup is inlined). Filled by
/// userspace. (Sizes: set by userspace.)
#[map]
pub static LAYOUTS: Array<Layout> = Array::with_max_entries(1, 0);
/// `layout_key(image id, kernel name)` -> layout id. Filled by userspace.
#[map]
pub static LAYOUT_BY_NAME: HashMap<u64, u32> = HashMap::with_max_entries(1, BPF_F_NO_PREALLOC);
/// (CUfunction / CUkernel, tgid) -> layout id. Filled here at GetFunction
/// returns. Handles are addresses in one process: two processes can use
/// the same value.
#[map]
pub static LAYOUT_BY_HANDLE: HashMap<[u64; 2], u32> = HashMap::with_max_entries(1, 0);
/// (CUmodule / CUlibrary, tgid) -> image id. Filled here at load returns.
#[map]
pub static MODULE_IMAGE: HashMap<[u64; 2], u32> = HashMap::with_max_entries(1, 0);
/// tid -> image id of the load it is in. Filled by userspace while the
/// thread is stopped at the load's entry.
#[map]
pub static PENDING_IMAGE: HashMap<u32, u32> = HashMap::with_max_entries(1, 0);
/// tgid -> 1 while the process has asynchronous device-to-host copies whose
/// bytes are read at its next synchronization (`--capture-data`). Sized by
/// userspace.
#[map]
pub static PENDING_D2H: HashMap<u32, u32> = HashMap::with_max_entries(1, 0);
/// Arguments 1 and 2 of a call with a return role, saved at entry (same key
/// as OUTPTRS).
#[map]
pub static ROLE_ARGS: HashMap<u64, [u64; 2]> = HashMap::with_max_entries(1, 0);

/// One launch record under construction per CPU (indexed by CPU number: a
/// per-CPU map's values are limited to 32 KiB; this one is 66 KiB).
#[map]
pub(crate) static SCRATCH: Array<LaunchParams> = Array::with_max_entries(1, 0);
/// `kernelParams[0..n]` of the launch in progress.
#[map]
static PTRS: PerCpuArray<[u64; MAX_PARAMS]> = PerCpuArray::with_max_entries(1, 0);
/// Parameters within this many bytes of each other are read in one piece
/// ([`span_into`]).
const SPAN_CAP: usize = tracer_common::params::SPAN_CAP;
/// A kernel name being hashed.
#[map]
static NAME: PerCpuArray<[u64; NAME_CAP / 8]> = PerCpuArray::with_max_entries(1, 0);
/// Zeros, copied over a parameter buffer before the parameters so that
/// padding bytes are 0 (one bpf_probe_read_kernel instead of a loop).
#[map]
static ZEROS: Array<[u8; PARAMS_CAP]> = Array::with_max_entries(1, 0);

const SIGSTOP: u32 = 19;
const BPF_RB_FORCE_WAKEUP: u64 = 2;

/// Entry side of `--replayable`, before the call's reserved record is
/// submitted (`submitted`: there is one; see [`before_exit_submit`] for why
/// before): saves the arguments the return role needs, and stops the
/// thread when userspace must read memory the call was given before it
/// runs.
#[inline(always)]
pub fn at_entry(c: Cookie, key: u64, args: &[u64; MAX_ARGS], submitted: bool) {
    if role::saves_args(c.role()) && ROLE_ARGS.insert(&key, &[args[1], args[2]], 0).is_err() {
        bump(counter::SAVE_FAILED);
    }
    // Only when the record is in the ring: userspace resumes the thread when
    // it handles that record, so a stop without one would never end.
    if c.stop() && submitted {
        unsafe { bpf_send_signal_thread(SIGSTOP) };
    }
}

/// Submit flags for a record of `c`: a stopping call wakes the collector at
/// once (the thread waits for it).
#[inline(always)]
pub fn flags_for(c: Cookie) -> u64 {
    if c.stop() { BPF_RB_FORCE_WAKEUP } else { submit_flags() }
}

/// Submit flags for a return record: one whose thread stopped wakes the
/// collector at once (the thread waits for it).
#[inline(always)]
pub fn exit_flags(stopped: bool) -> u64 {
    if stopped { BPF_RB_FORCE_WAKEUP } else { submit_flags() }
}

/// Before a reserved return record is submitted: `--capture-data` stops
/// the thread at the return of host-to-device copies (their source), the
/// synchronous device-to-host copy (its destination), and a synchronization
/// when its process has asynchronous device-to-host copies to read
/// (PENDING_D2H, marked at their successful return), so that userspace reads
/// the bytes before the program touches them. Returns whether it stopped the
/// thread (the record's `EXIT_STOPPED` flag: userspace resumes exactly those).
/// The signal must be queued before the collector can see the record (it
/// resumes the process when it has handled it): a SIGCONT that came first
/// would leave the process stopped for good.
#[inline(always)]
pub fn before_exit_submit(c: Cookie, pid: u32, ret: u64) -> bool {
    let ok = ret as u32 == 0;
    let stop = match c.role() {
        role::D2H_ASYNC => {
            if ok && PENDING_D2H.insert(&pid, &1, 0).is_err() {
                bump(counter::SAVE_FAILED);
            }
            false
        }
        role::SYNC => {
            let pending = unsafe { PENDING_D2H.get(&pid) }.is_some();
            if pending && ok {
                let _ = PENDING_D2H.remove(&pid);
            }
            pending
        }
        _ => c.stop_at_return(),
    };
    if stop {
        unsafe { bpf_send_signal_thread(SIGSTOP) };
    }
    stop
}

/// Return side: keeps MODULE_IMAGE and LAYOUT_BY_HANDLE current (keyed by
/// handle and process).
/// `out0` is the returned handle when `ok`.
#[inline(always)]
pub fn at_return(c: Cookie, pid: u32, tid: u32, key: u64, ok: bool, out0: u64) {
    let r = c.role();
    if r == role::NONE {
        return;
    }
    let out_key = [out0, pid as u64];
    if r == role::LOAD {
        if let Some(&img) = unsafe { PENDING_IMAGE.get(&tid) } {
            if ok {
                let _ = MODULE_IMAGE.insert(&out_key, &img, 0);
            }
            let _ = PENDING_IMAGE.remove(&tid);
        } else if ok {
            // A reused handle must not keep an unloaded image's id.
            let _ = MODULE_IMAGE.remove(&out_key);
        }
        return;
    }
    let Some(saved) = (unsafe { ROLE_ARGS.get(&key) }) else { return };
    let [src, name] = *saved;
    let _ = ROLE_ARGS.remove(&key);
    if !ok {
        return;
    }
    let found = match r {
        role::GET_FUNCTION => function_layout(pid, src, name),
        role::ALIAS_LAYOUT => unsafe { LAYOUT_BY_HANDLE.get(&[src, pid as u64]) }.copied(),
        role::ALIAS_MODULE => {
            match unsafe { MODULE_IMAGE.get(&[src, pid as u64]) } {
                Some(&img) => {
                    let _ = MODULE_IMAGE.insert(&out_key, &img, 0);
                }
                None => {
                    let _ = MODULE_IMAGE.remove(&out_key);
                }
            }
            return;
        }
        _ => return,
    };
    match found {
        Some(lid) => {
            let _ = LAYOUT_BY_HANDLE.insert(&out_key, &lid, 0);
        }
        None => {
            let _ = LAYOUT_BY_HANDLE.remove(&out_key);
        }
    }
}

/// The layout id of kernel `name_ptr` in module/library `module`.
#[inline(always)]
fn function_layout(pid: u32, module: u64, name_ptr: u64) -> Option<u32> {
    let img = *unsafe { MODULE_IMAGE.get(&[module, pid as u64]) }?;
    let words = unsafe { &mut *NAME.get_ptr_mut(0)? };
    let bytes = unsafe { core::slice::from_raw_parts_mut(words.as_mut_ptr() as *mut u8, NAME_CAP) };
    let n = unsafe { bpf_probe_read_user_str_bytes(name_ptr as *const u8, bytes) }.ok()?.len();
    let nw = n.div_ceil(8);
    let tail = n % 8;
    let mut h = key_start(img);
    let mut i = 0;
    while i < NAME_CAP / 8 {
        if i >= nw {
            break;
        }
        let mut w = match words.get(i) {
            Some(w) => *w,
            None => break,
        };
        if i + 1 == nw && tail != 0 {
            w &= (1u64 << (8 * tail)) - 1;
        }
        h = key_word(h, w);
        i += 1;
    }
    let key = key_end(h, n as u64);
    unsafe { LAYOUT_BY_NAME.get(&key) }.copied()
}

/// Fills `data` with the parameter buffer: (status, bytes, layout id).
#[inline(always)]
pub(crate) fn capture(pid: u32, f: u64, kp: u64, extra: u64, data: &mut [u8; 2 * PARAMS_CAP]) -> (u32, u32, u32) {
    let lid = unsafe { LAYOUT_BY_HANDLE.get(&[f, pid as u64]) }.copied().unwrap_or(0);
    if kp == 0 && extra != 0 {
        return from_extra(extra, data, lid);
    }
    if lid == 0 {
        return (status::NO_LAYOUT, 0, 0);
    }
    let Some(lay) = LAYOUTS.get(lid) else { return (status::NO_LAYOUT, 0, 0) };
    let n = lay.n as usize;
    let size = lay.size as usize;
    if n > MAX_PARAMS {
        return (status::TOO_MANY, 0, lid);
    }
    if size > PARAMS_CAP - 4 {
        return (status::TOO_BIG, 0, lid);
    }
    if n == 0 {
        return (status::LAYOUT, 0, lid);
    }
    if kp == 0 {
        return (status::NONE_GIVEN, 0, lid);
    }
    // `kernelParams[0..n]`, straight into the record: when the parameters
    // lie close together (the usual case), the record is these pointers and
    // the span of memory they point into, and userspace cuts the parameters
    // out of it (tracer_common::params::pack_span), which spares a copy and
    // a zeroing per launch here.
    if unsafe { bpf_probe_read_user(data.as_mut_ptr() as *mut _, ((n * 8) & 1023) as u32, kp as *const _) } != 0 {
        return (status::READ_FAILED, 0, lid);
    }
    if let Some(len) = span_into(n, &lay.params, data) {
        return (status::SPAN, ((n * 8) + len) as u32, lid);
    }
    let Some(zeros) = ZEROS.get_ptr(0) else { return (status::READ_FAILED, 0, lid) };
    let Some(ptrs) = PTRS.get_ptr_mut(0) else { return (status::READ_FAILED, 0, lid) };
    let ptrs = unsafe { &mut *ptrs };
    unsafe {
        if bpf_probe_read_kernel(ptrs.as_mut_ptr() as *mut _, (n * 8) as u32, data.as_ptr() as *const _) != 0 {
            return (status::READ_FAILED, 0, lid);
        }
        if lay.padded != 0 {
            bpf_probe_read_kernel(data.as_mut_ptr() as *mut _, (size & (PARAMS_CAP - 1)) as u32, zeros as *const _);
        }
    }
    let mut i = 0;
    while i < MAX_PARAMS {
        if i >= n {
            break;
        }
        let (Some(&os), Some(&p)) = (lay.params.get(i), ptrs.get(i)) else { break };
        let off = (os & 0x7fff) as usize;
        let sz = (os >> 16) & 0x7fff;
        let dst = unsafe { data.as_mut_ptr().add(off) };
        if unsafe { bpf_probe_read_user(dst as *mut _, sz, p as *const _) } != 0 {
            return (status::READ_FAILED, 0, lid);
        }
        i += 1;
    }
    (status::LAYOUT, size as u32, lid)
}

/// When the parameters of a launch lie within SPAN_CAP bytes of each other
/// (a launch stub's arguments are its own locals), reads that span in one
/// piece after the `n` pointers at the start of `data`, and returns its
/// length. None when they are further apart or the span cannot be read: the
/// caller then copies them one by one.
#[inline(always)]
fn span_into(n: usize, params: &[u32; MAX_PARAMS], data: &mut [u8; 2 * PARAMS_CAP]) -> Option<usize> {
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    let words = data.as_ptr() as *const u64;
    let mut i = 0;
    while i < MAX_PARAMS {
        if i >= n {
            break;
        }
        let os = *params.get(i)?;
        let p = unsafe { words.add(i).read() };
        let end = p.wrapping_add(((os >> 16) & 0x7fff) as u64);
        if end < p {
            return None;
        }
        lo = lo.min(p);
        hi = hi.max(end);
        i += 1;
    }
    if hi <= lo || hi - lo > SPAN_CAP as u64 {
        return None;
    }
    let len = (hi - lo) as usize & (2 * SPAN_CAP - 1);
    let at = (n * 8) & 1023;
    let dst = unsafe { data.as_mut_ptr().add(at) };
    if unsafe { bpf_probe_read_user(dst as *mut _, len as u32, lo as *const _) } != 0 {
        return None;
    }
    Some(len)
}

const CU_LAUNCH_PARAM_END: u64 = 0;
const CU_LAUNCH_PARAM_BUFFER_POINTER: u64 = 1;
const CU_LAUNCH_PARAM_BUFFER_SIZE: u64 = 2;

/// `extra`: {BUFFER_POINTER, buf, BUFFER_SIZE, &size, END} in any order.
#[inline(always)]
fn from_extra(extra: u64, data: &mut [u8; 2 * PARAMS_CAP], lid: u32) -> (u32, u32, u32) {
    // Up to 8 pairs in one read; the list may end near the end of a
    // mapping, so fall back to the 5 words of the usual list.
    let mut kv = [0u64; 16];
    let ok = unsafe {
        bpf_probe_read_user(kv.as_mut_ptr() as *mut _, 128, extra as *const _) == 0
            || bpf_probe_read_user(kv.as_mut_ptr() as *mut _, 40, extra as *const _) == 0
    };
    if !ok {
        return (status::READ_FAILED, 0, lid);
    }
    let (mut buf, mut size_ptr) = (0u64, 0u64);
    let mut i = 0;
    while i < 15 {
        let k = kv[i];
        if k == CU_LAUNCH_PARAM_END {
            break;
        }
        if k == CU_LAUNCH_PARAM_BUFFER_POINTER {
            buf = kv[i + 1];
        } else if k == CU_LAUNCH_PARAM_BUFFER_SIZE {
            size_ptr = kv[i + 1];
        }
        i += 2;
    }
    if buf == 0 || size_ptr == 0 {
        return (status::TOO_BIG, 0, lid);
    }
    let mut size = 0u64;
    if unsafe { bpf_probe_read_user(&mut size as *mut u64 as *mut _, 8, size_ptr as *const _) } != 0 {
        return (status::READ_FAILED, 0, lid);
    }
    if size > (PARAMS_CAP - 4) as u64 {
        return (status::TOO_BIG, 0, lid);
    }
    let sz = (size as usize & (PARAMS_CAP - 1)) as u32;
    if unsafe { bpf_probe_read_user(data.as_mut_ptr() as *mut _, sz, buf as *const _) } != 0 {
        return (status::READ_FAILED, 0, lid);
    }
    (status::EXTRA, sz, lid)
}
