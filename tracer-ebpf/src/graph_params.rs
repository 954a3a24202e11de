//! `--replayable`: graph calls that pass kernel node parameters
//! (cuGraphAddKernelNode*, cuGraphAddNode*, cuGraph(Exec)KernelNodeSetParams*,
//! cuGraph(Exec)NodeSetParams; cookie role `GRAPH_NODE`). The launch program
//! hands them here: the call's record as `cu_enter_blob` writes it (struct
//! argument and node lists), plus the node's parameter bytes, read from its
//! `kernelParams` or `extra` the way a launch's are (replay.rs `capture`),
//! in a LaunchParams record. A node that is not a kernel (cuGraphAddNode of
//! another type) gets the plain CallEnterBlob record. Rare calls (graph
//! building and updates): the launch path is not slowed.
use aya_ebpf::programs::ProbeContext;
use tracer_common::{
    cookie::Cookie,
    event::{CallEnterBlob, EventKind},
    funcs::Arg,
    params::{LaunchParams, PARAMS_CAP, PARAMS_OFFSET},
};

use aya_ebpf::helpers::bpf_get_smp_processor_id;
use tracer_common::event::counter;

use crate::args::{arg_at, read_args, read_blob};
use crate::maps::{EVENTS, bump, header, submit_flags};
use crate::out_ptrs::save_outs;
use crate::replay::{SCRATCH, capture};

/// Where the kernel node struct starts in the struct argument: 0 for
/// CUDA_KERNEL_NODE_PARAMS (v1/v2), 16 for CUgraphNodeParams (after
/// `type` and `reserved0`), whose type must then be kernel (0).
const GENERIC: usize = Arg::GraphNodeParams.blob_size();
const V2: usize = Arg::KernelNode.blob_size();

#[inline(always)]
fn u64_at(b: &[u8], off: usize) -> u64 {
    match b.get(off..off + 8) {
        Some(s) => u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]),
        None => 0,
    }
}

#[inline(always)]
pub(crate) fn graph_node(ctx: &ProbeContext, c: Cookie, pid: u32, tid: u32) {
    let cpu = unsafe { bpf_get_smp_processor_id() };
    let Some(rec) = SCRATCH.get_ptr_mut(cpu) else {
        bump(counter::RB_FULL);
        return;
    };
    let rec = unsafe { &mut *rec };
    rec.hdr = header(EventKind::LaunchParams as u16, c.func(), pid, tid);
    read_args(ctx, c, &mut rec.args);
    save_outs(c, tid, &rec.args);
    rec.blob_len = 0;
    rec.nattrs = 0;
    rec.status = 0;
    rec.len = 0;
    rec.layout = 0;
    rec._pad = 0;
    // The same prefix as CallEnterBlob (asserted in tracer-common).
    let blob = unsafe { &mut *(rec as *mut LaunchParams as *mut CallEnterBlob) };
    if let Some(i) = c.blob_arg() {
        read_blob(c, arg_at(&blob.args, i), blob);
    }
    let read = blob.len != 0;
    crate::graph::read_node_lists(c, blob);
    let size = c.blob_size();
    let base = if size == GENERIC { 16 } else { 0 };
    let kernel = read && (size != GENERIC || u64_at(&blob.data, 0) as u32 == 0);
    if !kernel {
        // A plain blob record: the kind field says so.
        rec.hdr.kind = EventKind::CallEnterBlob as u16;
        let bytes =
            unsafe { core::slice::from_raw_parts(rec as *const LaunchParams as *const u8, size_of::<CallEnterBlob>()) };
        if EVENTS.output::<[u8]>(bytes, submit_flags()).is_err() {
            bump(counter::RB_FULL);
        }
        return;
    }
    let func = u64_at(&blob.data, base);
    let kern = if size == GENERIC || size == V2 { u64_at(&blob.data, base + 56) } else { 0 };
    let f = if func == 0 { kern } else { func };
    let kp = u64_at(&blob.data, base + 40);
    let extra = u64_at(&blob.data, base + 48);
    let (st, len, layout) = capture(pid, f, kp, extra, &mut rec.data);
    rec.status = st;
    rec.len = len;
    rec.layout = layout;
    let n = PARAMS_OFFSET + (len as usize & (PARAMS_CAP - 1));
    let bytes = unsafe { core::slice::from_raw_parts(rec as *const LaunchParams as *const u8, n) };
    if EVENTS.output::<[u8]>(bytes, submit_flags()).is_err() {
        bump(counter::RB_FULL);
    }
}
