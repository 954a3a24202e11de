//! Out-parameter pointers (and an unread string's pointer) saved at a
//! call's entry in OUTPTRS for its return probe to read.
use tracer_common::{
    cookie::Cookie,
    event::{MAX_ARGS, counter},
};

use crate::args::arg_at;
use crate::maps::{OUTPTRS, bump};

/// The OUTPTRS key of a call in progress: (tid << 16 | func id).
#[inline(always)]
pub(crate) fn outptr_key(tid: u32, c: Cookie) -> u64 {
    ((tid as u64) << 16) | c.func() as u64
}

/// Saves out-parameter pointers (and an unread string's pointer) for the
/// return probe.
#[inline(always)]
pub(crate) fn save_outs(c: Cookie, tid: u32, args: &[u64; MAX_ARGS]) {
    save_ptrs(c, tid, args, 0)
}

#[inline(always)]
pub(crate) fn save_ptrs(c: Cookie, tid: u32, args: &[u64; MAX_ARGS], unread_str: u64) {
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
