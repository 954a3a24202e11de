//! Graph construction calls: the node handles they pass by pointer
//! (`dependencies`, `from`/`to`), copied after the struct argument in the
//! same `CallEnterBlob` record (layout: tracer-common/src/graph.rs). Rare
//! calls (graph building), so one or two extra user reads cost nothing
//! that matters.
use aya_ebpf::helpers::generated::bpf_probe_read_user;
use tracer_common::{
    cookie::Cookie,
    event::{BLOB_CAP, CallEnterBlob},
    graph::{NODES_CAP, NODES_OFF, STRUCT_READ, node_lists},
};

use crate::args::arg_at;

/// Appends the node lists the cookie names to `rec` (nothing for other
/// functions).
#[inline(always)]
pub(crate) fn read_node_lists(c: Cookie, rec: &mut CallEnterBlob) {
    let Some((list, count, pair)) = node_lists(c) else { return };
    let struct_read = if rec.len != 0 { STRUCT_READ } else { 0 };
    let total = arg_at(&rec.args, count);
    let n = if total > NODES_CAP as u64 { NODES_CAP } else { total as usize };
    let first = arg_at(&rec.args, list);
    let second = if pair { arg_at(&rec.args, list + 1) } else { 0 };
    let mut got = 0u32;
    if n > 0 && first != 0 {
        let size = (n * 8) as u32;
        // A pair: `from` at the start, `to` at NODES_OFF; else the list at NODES_OFF.
        let ok = unsafe {
            if pair {
                second != 0
                    && bpf_probe_read_user(rec.data.as_mut_ptr() as *mut _, size, first as *const _) == 0
                    && bpf_probe_read_user(rec.data.as_mut_ptr().add(NODES_OFF) as *mut _, size, second as *const _)
                        == 0
            } else {
                bpf_probe_read_user(rec.data.as_mut_ptr().add(NODES_OFF) as *mut _, size, first as *const _) == 0
            }
        };
        if ok {
            got = n as u32;
        }
    }
    rec.nattrs = got | struct_read;
    rec.len = BLOB_CAP as u32;
}
