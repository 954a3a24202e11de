//! The generic entry and return probes. Three entry programs differ only in
//! the record they reserve (plain, with a string, with a struct), so the hot
//! path (launches, copies) reserves the smallest record.
use aya_ebpf::{
    EbpfContext,
    helpers::{bpf_get_attach_cookie, bpf_probe_read_user, bpf_probe_read_user_buf, bpf_probe_read_user_str_bytes},
    macros::{uprobe, uretprobe},
    programs::{ProbeContext, RetProbeContext},
};
use tracer_common::{
    cookie::Cookie,
    event::{
        CallEnter, CallEnterBlob, CallEnterStr, CallExit, CallExitStr, EXIT_STOPPED, EventKind, MAX_ARGS,
        MAX_LAUNCH_ATTRS, counter,
    },
};

use crate::maps::{EVENTS, OUTPTRS, bump, current, header, submit_flags};
use crate::replay;

#[inline(always)]
pub(crate) fn cookie<C: EbpfContext>(ctx: &C) -> Cookie {
    Cookie(unsafe { bpf_get_attach_cookie(ctx.as_ptr()) })
}

/// Reads the 6 register arguments and `c.stack_args()` stack arguments
/// into `args`, writing every slot (the ones past the function's own
/// arguments get 0), so callers need not zero it first: a `[0; MAX_ARGS]`
/// assignment compiles to a call of a byte-by-byte memset subprogram in
/// BPF (88 iterations per call, plus 40 for a local buffer: ~15 % of the
/// program's time on a launch, `perf` in `cargo xtask bench collector`).
#[inline(always)]
pub(crate) fn read_args(ctx: &ProbeContext, c: Cookie, args: &mut [u64; MAX_ARGS]) {
    let regs = unsafe { &*ctx.regs };
    args[0] = regs.rdi;
    args[1] = regs.rsi;
    args[2] = regs.rdx;
    args[3] = regs.rcx;
    args[4] = regs.r8;
    args[5] = regs.r9;
    let n = c.stack_args();
    if n == 0 {
        zero(&mut args[6]);
        zero(&mut args[7]);
        zero(&mut args[8]);
        zero(&mut args[9]);
        zero(&mut args[10]);
        return;
    }
    // At the first instruction rsp points at the return address; the 7th
    // argument follows it. One read for all of them, straight into the
    // record (a user-memory read is a helper call plus the kernel's
    // usercopy checks, ~100-200 ns here). The words past the function's own
    // arguments belong to the caller's frame and are zeroed below. Should
    // that wider read fail (the frame at the very top of a stack), the
    // function's own words are read one by one.
    let sp = regs.rsp + 8;
    let ok = unsafe {
        let buf = core::slice::from_raw_parts_mut(args.as_mut_ptr().add(6) as *mut u8, 8 * (MAX_ARGS - 6));
        bpf_probe_read_user_buf(sp as *const u8, buf).is_ok()
    };
    if !ok {
        // Unrolled: indexing in a loop leaves bounds-check panics the
        // verifier rejects.
        let rd = |k: u64| unsafe { bpf_probe_read_user((sp + 8 * k) as *const u64) }.unwrap_or(0);
        args[6] = rd(0);
        if n > 1 {
            args[7] = rd(1);
        }
        if n > 2 {
            args[8] = rd(2);
        }
        if n > 3 {
            args[9] = rd(3);
        }
        if n > 4 {
            args[10] = rd(4);
        }
    }
    // Only the function's own stack arguments: the rest is not ours to report.
    if n < 2 {
        zero(&mut args[7]);
    }
    if n < 3 {
        zero(&mut args[8]);
    }
    if n < 4 {
        zero(&mut args[9]);
    }
    if n < 5 {
        zero(&mut args[10]);
    }
}

/// A single 8-byte store of 0 that LLVM cannot merge with its neighbours
/// into a call of the byte-loop memset.
#[inline(always)]
fn zero(slot: &mut u64) {
    unsafe { core::ptr::write_volatile(slot, 0) }
}

/// `args[i]` with constant indexes only: a variable index compiles to a
/// bounds check on one register and an access through another, which older
/// verifiers (Linux 6.1) cannot relate ("invalid access to memory").
#[inline(always)]
pub(crate) fn arg_at(args: &[u64; MAX_ARGS], i: usize) -> u64 {
    match i {
        0 => args[0],
        1 => args[1],
        2 => args[2],
        3 => args[3],
        4 => args[4],
        5 => args[5],
        6 => args[6],
        7 => args[7],
        8 => args[8],
        9 => args[9],
        10 => args[10],
        _ => 0,
    }
}

/// The OUTPTRS key of a call in progress: (tid << 16 | func id).
#[inline(always)]
fn outptr_key(tid: u32, c: Cookie) -> u64 {
    ((tid as u64) << 16) | c.func() as u64
}

/// Saves out-parameter pointers (and an unread string's pointer) for the
/// return probe.
#[inline(always)]
pub(crate) fn save_outs(c: Cookie, tid: u32, args: &[u64; MAX_ARGS]) {
    save_ptrs(c, tid, args, 0)
}

#[inline(always)]
fn save_ptrs(c: Cookie, tid: u32, args: &[u64; MAX_ARGS], unread_str: u64) {
    if !c.has_out() && unread_str == 0 {
        return;
    }
    // Built from values, not zeroed then filled (which becomes a memset call).
    let p0 = match c.out_arg(0) {
        Some(i) => arg_at(args, i),
        None => 0,
    };
    let p1 = match c.out_arg(1) {
        Some(i) => arg_at(args, i),
        None => 0,
    };
    let ptrs = [p0, p1, unread_str];
    let key = outptr_key(tid, c);
    if OUTPTRS.insert(&key, &ptrs, 0).is_err() {
        bump(counter::SAVE_FAILED);
    }
}

#[uprobe]
pub fn cu_enter(ctx: ProbeContext) -> u32 {
    let (pid, tid) = current();
    if !crate::select::wanted(pid) {
        return 0;
    }
    let c = cookie(&ctx);
    let hdr = header(EventKind::CallEnter as u16, c.func(), pid, tid);
    match EVENTS.reserve::<CallEnter>(0) {
        Some(mut e) => {
            let rec = unsafe { &mut *e.as_mut_ptr() };
            rec.hdr = hdr;
            read_args(&ctx, c, &mut rec.args);
            save_outs(c, tid, &rec.args);
            // Before the submit: the collector resumes the thread when it
            // sees the record, so a stop requested after could come last.
            replay::at_entry(c, outptr_key(tid, c), &rec.args, true);
            e.submit(replay::flags_for(c));
        }
        None => {
            bump(counter::RB_FULL);
            // Still save out-pointers: the exit record carries the results.
            let mut args = [0u64; MAX_ARGS];
            read_args(&ctx, c, &mut args);
            save_outs(c, tid, &args);
            replay::at_entry(c, outptr_key(tid, c), &args, false);
        }
    }
    0
}

#[uprobe]
pub fn cu_enter_str(ctx: ProbeContext) -> u32 {
    let (pid, tid) = current();
    if !crate::select::wanted(pid) {
        return 0;
    }
    let c = cookie(&ctx);
    let hdr = header(EventKind::CallEnterStr as u16, c.func(), pid, tid);
    match EVENTS.reserve::<CallEnterStr>(0) {
        Some(mut e) => {
            let rec = unsafe { &mut *e.as_mut_ptr() };
            rec.hdr = hdr;
            read_args(&ctx, c, &mut rec.args);
            rec.len = 0;
            rec._pad = 0;
            let mut unread = 0;
            if let Some(i) = c.str_arg() {
                let p = arg_at(&rec.args, i);
                match unsafe { bpf_probe_read_user_str_bytes(p as *const u8, &mut rec.data) } {
                    // bytes read, NUL included
                    Ok(s) => rec.len = s.len() as u32 + 1,
                    // Probes cannot fault pages in: retry at return, once
                    // the callee has touched the string.
                    Err(_) => unread = p,
                }
            }
            save_ptrs(c, tid, &rec.args, unread);
            replay::at_entry(c, outptr_key(tid, c), &rec.args, true);
            e.submit(replay::flags_for(c));
        }
        None => {
            bump(counter::RB_FULL);
            let mut args = [0u64; MAX_ARGS];
            read_args(&ctx, c, &mut args);
            save_outs(c, tid, &args);
            replay::at_entry(c, outptr_key(tid, c), &args, false);
        }
    }
    0
}

#[uprobe]
pub fn cu_enter_blob(ctx: ProbeContext) -> u32 {
    let (pid, tid) = current();
    if !crate::select::wanted(pid) {
        return 0;
    }
    let c = cookie(&ctx);
    let hdr = header(EventKind::CallEnterBlob as u16, c.func(), pid, tid);
    match EVENTS.reserve::<CallEnterBlob>(0) {
        Some(mut e) => {
            let rec = unsafe { &mut *e.as_mut_ptr() };
            rec.hdr = hdr;
            read_args(&ctx, c, &mut rec.args);
            save_outs(c, tid, &rec.args);
            rec.len = 0;
            rec.nattrs = 0;
            if let Some(i) = c.blob_arg() {
                let p = arg_at(&rec.args, i);
                read_blob(c, p, rec);
            }
            crate::graph::read_node_lists(c, rec);
            e.submit(submit_flags());
        }
        None => {
            bump(counter::RB_FULL);
            let mut args = [0u64; MAX_ARGS];
            read_args(&ctx, c, &mut args);
            save_outs(c, tid, &args);
        }
    }
    0
}

const LAUNCH_CONFIG_SIZE: usize = 56;
const LAUNCH_ATTR_SIZE: usize = 72;

#[inline(always)]
pub(crate) fn read_blob(c: Cookie, ptr: u64, rec: &mut CallEnterBlob) {
    if c.launch_config() {
        // CUlaunchConfig: 7 x u32 dims/shmem, pad, hStream @32, attrs @40, numAttrs @48.
        let cfg = &mut rec.data[..LAUNCH_CONFIG_SIZE];
        if unsafe { bpf_probe_read_user_buf(ptr as *const u8, cfg) }.is_err() {
            return;
        }
        rec.len = LAUNCH_CONFIG_SIZE as u32;
        let attrs = u64::from_le_bytes([
            rec.data[40],
            rec.data[41],
            rec.data[42],
            rec.data[43],
            rec.data[44],
            rec.data[45],
            rec.data[46],
            rec.data[47],
        ]);
        let n = u32::from_le_bytes([rec.data[48], rec.data[49], rec.data[50], rec.data[51]]) as usize;
        let mut k = 0;
        while k < MAX_LAUNCH_ATTRS {
            if k >= n {
                break;
            }
            let off = LAUNCH_CONFIG_SIZE + k * LAUNCH_ATTR_SIZE;
            let Some(dst) = rec.data.get_mut(off..off + LAUNCH_ATTR_SIZE) else { break };
            if unsafe { bpf_probe_read_user_buf((attrs + (k * LAUNCH_ATTR_SIZE) as u64) as *const u8, dst) }.is_err() {
                break;
            }
            k += 1;
        }
        rec.nattrs = k as u32;
        rec.len = (LAUNCH_CONFIG_SIZE + k * LAUNCH_ATTR_SIZE) as u32;
        return;
    }
    let size = c.blob_size();
    // Struct sizes are fixed per function: branch to constant-size reads the
    // verifier can check.
    let ok = match size {
        12 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..12]) }.is_ok(),
        16 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..16]) }.is_ok(),
        32 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..32]) }.is_ok(),
        40 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..40]) }.is_ok(),
        56 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..56]) }.is_ok(),
        72 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..72]) }.is_ok(),
        128 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..128]) }.is_ok(),
        200 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..200]) }.is_ok(),
        232 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..232]) }.is_ok(),
        _ => false,
    };
    if ok {
        rec.len = size as u32;
    }
}

#[uretprobe]
pub fn cu_exit(ctx: RetProbeContext) -> u32 {
    let (pid, tid) = current();
    if !crate::select::wanted(pid) {
        return 0;
    }
    let c = cookie(&ctx);
    let ret: u64 = ctx.ret();
    let mut out = [0u64; 2];
    let mut out_ok = 0u32;
    let mut unread_str = 0u64;
    if c.has_out() || c.str_arg().is_some() {
        let key = outptr_key(tid, c);
        if let Some(ptrs) = unsafe { OUTPTRS.get(&key) } {
            let [p0, p1, ps] = *ptrs;
            unread_str = ps;
            // A failed call leaves its out-parameters undefined (usually
            // untouched): report none rather than stale memory.
            if ret as u32 == 0 {
                if let Some(v) = read_out(p0, c.out_is_4(0)) {
                    out[0] = v;
                    out_ok |= 1;
                }
                if let Some(v) = read_out(p1, c.out_is_4(1)) {
                    out[1] = v;
                    out_ok |= 2;
                }
            }
            let _ = OUTPTRS.remove(&key);
        }
        replay::at_return(c, pid, tid, key, ret as u32 == 0 && out_ok & 1 != 0, out[0]);
    }
    if unread_str != 0 {
        let hdr = header(EventKind::CallExitStr as u16, c.func(), pid, tid);
        match EVENTS.reserve::<CallExitStr>(0) {
            Some(mut e) => {
                let rec = unsafe { &mut *e.as_mut_ptr() };
                rec.exit = CallExit { hdr, ret, out, out_ok, flags: 0 };
                rec.len = 0;
                rec._pad = 0;
                if let Ok(s) = unsafe { bpf_probe_read_user_str_bytes(unread_str as *const u8, &mut rec.data) } {
                    rec.len = s.len() as u32 + 1;
                }
                e.submit(submit_flags());
            }
            None => {
                bump(counter::RB_FULL);
            }
        }
        return 0;
    }
    let hdr = header(EventKind::CallExit as u16, c.func(), pid, tid);
    match EVENTS.reserve::<CallExit>(0) {
        Some(mut e) => {
            let rec = unsafe { &mut *e.as_mut_ptr() };
            rec.hdr = hdr;
            rec.ret = ret;
            rec.out = out;
            rec.out_ok = out_ok;
            // Stop first, then submit (see cu_enter).
            let stopped = replay::before_exit_submit(c, pid, ret);
            rec.flags = if stopped { EXIT_STOPPED } else { 0 };
            e.submit(replay::exit_flags(stopped));
        }
        None => {
            bump(counter::RB_FULL);
        }
    }
    0
}

#[inline(always)]
fn read_out(p: u64, four: bool) -> Option<u64> {
    if p == 0 {
        return None;
    }
    if four {
        unsafe { bpf_probe_read_user(p as *const u32) }.ok().map(|v| v as u64)
    } else {
        unsafe { bpf_probe_read_user(p as *const u64) }.ok()
    }
}
