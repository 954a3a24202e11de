//! Graph construction calls (`cuGraphAdd*Node`, `cuGraphAddDependencies`,
//! `cuStreamBeginCaptureToGraph`): besides their struct argument, they pass
//! node handles by pointer (`dependencies`, or `from`/`to`) with a count.
//! The `cu_enter_blob` program copies those lists into the same record:
//!
//! ```text
//! data[0..NODES_OFF]          the struct argument (or, for a pair of lists,
//!                             the first list: `from`)
//! data[NODES_OFF..BLOB_CAP]   the node list (`dependencies`, or `to`),
//!                             up to NODES_CAP handles
//! len                         BLOB_CAP when lists were read (the struct
//!                             length is the function's, see `struct_read`)
//! nattrs                      bits 0..16: handles copied per list;
//!                             bit 16: the struct argument was read
//! ```
//!
//! The cookie says where the lists are, in the bits launch functions use
//! for `kernelParams`/`extra` (graph functions are never launches): the
//! list argument (kernelParams' bits), the count argument (extra's bits),
//! and bit 63 set for a pair of lists at arguments i and i + 1 (set by
//! `FuncSpec::cookie`, funcs.rs).
use crate::cookie::Cookie;
use crate::event::BLOB_CAP;

/// Where the node list starts in the record's `data`.
pub const NODES_OFF: usize = 232;
/// Node handles copied per list (a call with more is counted as cut).
pub const NODES_CAP: usize = (BLOB_CAP - NODES_OFF) / 8;
/// `nattrs` bit: the struct argument was read.
pub const STRUCT_READ: u32 = 1 << 16;

/// The node-list argument, count argument and pair flag of a graph cookie.
#[inline(always)]
pub const fn node_lists(c: Cookie) -> Option<(usize, usize, bool)> {
    match (c.kernel_params_arg(), c.extra_arg()) {
        (Some(l), Some(n)) => Some((l, n, c.func_handle_arg() == 1)),
        _ => None,
    }
}

const _: () = assert!(NODES_OFF.is_multiple_of(8) && NODES_CAP == 14);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::funcs::lookup;

    #[test]
    fn node_list_bits_of_graph_functions() {
        let c = |n: &str| {
            let id = lookup(n).unwrap();
            id.spec().unwrap().cookie(id)
        };
        assert_eq!(node_lists(c("cuGraphAddKernelNode_v2")), Some((2, 3, false)));
        assert_eq!(c("cuGraphAddKernelNode_v2").blob_size(), 72);
        assert_eq!(c("cuGraphAddKernelNode_v2").blob_arg(), Some(4));
        assert_eq!(node_lists(c("cuGraphAddNode_v2")), Some((2, 4, false)));
        assert_eq!(c("cuGraphAddNode_v2").blob_size(), NODES_OFF);
        assert_eq!(node_lists(c("cuGraphAddDependencies")), Some((1, 3, true)));
        assert_eq!(node_lists(c("cuGraphAddDependencies_v2")), Some((1, 4, true)));
        assert_eq!(node_lists(c("cuGraphAddEmptyNode")), Some((2, 3, false)));
        assert_eq!(node_lists(c("cuLaunchKernel")), None);
        // A batch copy's sizes, `count` of them.
        assert_eq!(node_lists(c("cuMemcpyBatchAsync_v2")), Some((2, 3, false)));
        assert!(lookup("cuMemcpyBatchAsync_v2").unwrap().spec().unwrap().has_blob());
        assert_eq!(node_lists(c("cuMemAdvise")), None);
        assert_eq!(node_lists(c("cuGraphKernelNodeSetParams_v2")), None);
        assert!(lookup("cuGraphAddEmptyNode").unwrap().spec().unwrap().has_blob());
        assert!(!lookup("cuGraphLaunch").unwrap().spec().unwrap().has_blob());
    }
}
