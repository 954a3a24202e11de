//! `--replayable`: the launch program. cuLaunchKernel and its kin get
//! their parameter bytes (replay.rs `capture`); graph calls that pass
//! kernel node parameters go to graph_params.rs.
use aya_ebpf::{helpers::bpf_get_smp_processor_id, macros::uprobe, programs::ProbeContext};
use tracer_common::{
    cookie::role,
    event::{CallEnterBlob, EventKind, counter},
    params::{LaunchParams, PARAMS_CAP, PARAMS_OFFSET},
};

use crate::args::{arg_at, cookie, read_args, read_blob};
use crate::maps::{EVENTS, bump, current, header, submit_flags};
use crate::replay::{SCRATCH, capture};

/// cuLaunchKernel, cuLaunchCooperativeKernel, cuLaunchKernelEx (and their
/// _ptsz variants) under `--replayable`: the call's record with its
/// parameter bytes, instead of the plain entry record.
#[uprobe]
pub fn cu_launch(ctx: ProbeContext) -> u32 {
    let (pid, tid) = current();
    if !crate::select::wanted(pid) {
        return 0;
    }
    let c = cookie(&ctx);
    if c.role() == role::GRAPH_NODE {
        crate::graph_params::graph_node(&ctx, c, pid, tid);
        return 0;
    }
    let hdr = header(EventKind::LaunchParams as u16, c.func(), pid, tid);
    if crate::stack::at_call(c.func(), tid) {
        crate::stack::emit(&ctx, tracer_common::stack::site::CALL, &hdr);
    }
    let cpu = unsafe { bpf_get_smp_processor_id() };
    let Some(rec) = SCRATCH.get_ptr_mut(cpu) else {
        bump(counter::RB_FULL);
        return 0;
    };
    let rec = unsafe { &mut *rec };
    rec.hdr = hdr;
    read_args(&ctx, c, &mut rec.args);
    rec.blob_len = 0;
    rec.nattrs = 0;
    if let Some(i) = c.blob_arg() {
        let p = arg_at(&rec.args, i);
        // The same prefix as CallEnterBlob (asserted in tracer-common).
        read_blob(c, p, unsafe { &mut *(rec as *mut LaunchParams as *mut CallEnterBlob) });
    }
    let f = arg_at(&rec.args, c.func_handle_arg());
    let kp = match c.kernel_params_arg() {
        Some(i) => arg_at(&rec.args, i),
        None => 0,
    };
    let extra = match c.extra_arg() {
        Some(i) => arg_at(&rec.args, i),
        None => 0,
    };
    let (st, len, layout) = capture(pid, f, kp, extra, &mut rec.data);
    rec.status = st;
    rec.len = len;
    rec.layout = layout;
    rec._pad = 0;
    let size = PARAMS_OFFSET + (len as usize & (PARAMS_CAP - 1));
    let bytes = unsafe { core::slice::from_raw_parts(rec as *const LaunchParams as *const u8, size) };
    if EVENTS.output::<[u8]>(bytes, submit_flags()).is_err() {
        bump(counter::RB_FULL);
    }
    0
}
