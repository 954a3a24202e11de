//! The generic entry and return probes. Three entry programs differ only in
//! the record they reserve (plain, with a string, with a struct), so the hot
//! path (launches, copies) reserves the smallest record.
use aya_ebpf::{
    helpers::{bpf_probe_read_user, bpf_probe_read_user_str_bytes},
    macros::{uprobe, uretprobe},
    programs::{ProbeContext, RetProbeContext},
};
use tracer_common::event::{
    CallEnter, CallEnterBlob, CallEnterStr, CallExit, CallExitStr, EXIT_STOPPED, EventKind, MAX_ARGS, counter,
};

use tracer_common::stack::site;

use crate::args::{arg_at, cookie, read_args, read_blob};
use crate::maps::{EVENTS, OUTPTRS, bump, current, header, submit_flags};
use crate::out_ptrs::{outptr_key, save_outs, save_ptrs};
use crate::replay;

#[uprobe]
pub fn cu_enter(ctx: ProbeContext) -> u32 {
    let (pid, tid) = current();
    if !crate::select::wanted(pid) {
        return 0;
    }
    let c = cookie(&ctx);
    let hdr = header(EventKind::CallEnter as u16, c.func(), pid, tid);
    if crate::stack::at_call(c.func(), tid) {
        crate::stack::emit(&ctx, site::CALL, &hdr);
    }
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
    if crate::stack::at_call(c.func(), tid) {
        crate::stack::emit(&ctx, site::CALL, &hdr);
    }
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
    if crate::stack::at_call(c.func(), tid) {
        crate::stack::emit(&ctx, site::CALL, &hdr);
    }
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
