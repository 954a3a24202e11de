//! Which probed functions do what under `--replayable` (and
//! `--capture-data`): the cookie bits and the entry program. Pure.
use tracer_common::cookie::{Cookie, role};
use tracer_common::funcs::FuncId;

/// Loads whose entry stops the thread so that userspace can read the image.
pub const LOADS: [&str; 6] = [
    "cuModuleLoad",
    "cuModuleLoadData",
    "cuModuleLoadDataEx",
    "cuModuleLoadFatBinary",
    "cuLibraryLoadData",
    "cuLibraryLoadFromFile",
];

/// Host-to-device copies whose source is read at their return
/// (`--capture-data`): the bytes the copy took (a pageable source is staged
/// during the call; a page-locked one must not change until the copy
/// completes), read after the driver has staged them, so that the thread's
/// stop does not come between the call and its copy.
pub const H2D_COPIES: [&str; 2] = ["cuMemcpyHtoD_v2", "cuMemcpyHtoDAsync_v2"];

/// Device-to-host copies whose destination is read when the data is
/// there (`--capture-data`): at the return of the synchronous one, at the
/// next synchronization for the asynchronous one (whose own return does not
/// stop the thread: nothing is read there).
pub const D2H_COPIES: [&str; 2] = ["cuMemcpyDtoH_v2", "cuMemcpyDtoHAsync_v2"];

/// Calls after whose return the asynchronous device-to-host copies issued
/// before are complete (for the streams they synchronize).
pub const SYNCS: [&str; 3] = ["cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize"];

/// Launch functions: (name, handle argument, kernelParams argument, extra argument).
pub const LAUNCHES: [(&str, u8, u8, Option<u8>); 3] = [
    ("cuLaunchKernel", 0, 9, Some(10)),
    ("cuLaunchCooperativeKernel", 0, 9, None),
    ("cuLaunchKernelEx", 1, 2, Some(3)),
];

/// Graph calls that pass kernel node parameters: their entry goes to the
/// launch program, which also copies the node's parameter bytes (role
/// `GRAPH_NODE`; tracer-ebpf/src/graph_params.rs).
pub const GRAPH_NODES: [&str; 10] = [
    "cuGraphAddKernelNode",
    "cuGraphAddKernelNode_v2",
    "cuGraphAddNode",
    "cuGraphAddNode_v2",
    "cuGraphKernelNodeSetParams",
    "cuGraphKernelNodeSetParams_v2",
    "cuGraphNodeSetParams",
    "cuGraphExecKernelNodeSetParams",
    "cuGraphExecKernelNodeSetParams_v2",
    "cuGraphExecNodeSetParams",
];

pub fn is_graph_node(id: FuncId) -> bool {
    GRAPH_NODES.contains(&base(id))
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mode {
    pub replayable: bool,
    pub capture_data: bool,
}

fn base(id: FuncId) -> &'static str {
    id.spec().map_or("", |s| s.name)
}

pub fn is_load(id: FuncId) -> bool {
    LOADS.contains(&base(id))
}

pub fn is_h2d_copy(id: FuncId) -> bool {
    H2D_COPIES.contains(&base(id))
}

pub fn is_d2h_copy(id: FuncId) -> bool {
    D2H_COPIES.contains(&base(id))
}

/// By base name: CUDA 13's `cudaDeviceSynchronize` reaches the driver as
/// `cuCtxSynchronize_v2`, a later CUDA may version the others.
pub fn is_sync(id: FuncId) -> bool {
    SYNCS.contains(&tracer_common::funcs::base_name(base(id)))
}

pub fn is_async(id: FuncId) -> bool {
    base(id).contains("Async")
}

/// Calls whose return always stops the thread for the recorder to read host
/// memory (`--capture-data`): host-to-device copies (their source) and the
/// synchronous device-to-host copy (its destination). A synchronization
/// stops it only when its process has asynchronous device-to-host copies to
/// read (role `SYNC`), and an asynchronous device-to-host copy's return marks
/// that without a stop (role `D2H_ASYNC`): the kernel side decides, and says
/// so in the return record (`EXIT_STOPPED`).
pub fn stops_at_return(id: FuncId, m: Mode) -> bool {
    m.capture_data && (is_h2d_copy(id) || (is_d2h_copy(id) && !is_async(id)))
}

pub fn launch_args(id: FuncId) -> Option<(u8, u8, Option<u8>)> {
    LAUNCHES.iter().find(|l| l.0 == base(id)).map(|l| (l.1, l.2, l.3))
}

/// Functions the return probe must see: the layout chain, and with
/// `--capture-data` the copies and synchronizations.
pub fn needs_return(id: FuncId, m: Mode) -> bool {
    m.replayable
        && (is_load(id)
            || matches!(
                base(id),
                "cuModuleGetFunction" | "cuLibraryGetKernel" | "cuKernelGetFunction" | "cuLibraryGetModule"
            )
            || (m.capture_data && (is_h2d_copy(id) || is_d2h_copy(id) || is_sync(id))))
}

/// The attach cookie of `id` in mode `m`.
pub fn cookie(id: FuncId, m: Mode) -> Cookie {
    let c = id.spec().expect("table entry").cookie(id);
    if !m.replayable {
        return c;
    }
    let r = match base(id) {
        n if LOADS.contains(&n) => role::LOAD,
        "cuModuleGetFunction" | "cuLibraryGetKernel" => role::GET_FUNCTION,
        "cuKernelGetFunction" => role::ALIAS_LAYOUT,
        "cuLibraryGetModule" => role::ALIAS_MODULE,
        n if GRAPH_NODES.contains(&n) => role::GRAPH_NODE,
        _ if m.capture_data && is_d2h_copy(id) && is_async(id) => role::D2H_ASYNC,
        _ if m.capture_data && is_sync(id) => role::SYNC,
        _ => role::NONE,
    };
    let mut c = c.with_role(r);
    if is_load(id) {
        c = c.with_stop();
    }
    if stops_at_return(id, m) {
        c = c.with_stop_at_return();
    }
    if let Some((f, kp, extra)) = launch_args(id) {
        c = c.with_launch_args(f, kp, extra);
    }
    c
}

/// The entry program for `id`, given the plain choice.
pub fn entry_program(id: FuncId, m: Mode, plain: &'static str) -> &'static str {
    if m.replayable && (launch_args(id).is_some() || is_graph_node(id)) { "cu_launch" } else { plain }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracer_common::funcs::lookup;

    fn id(name: &str) -> FuncId {
        lookup(name).unwrap_or_else(|| panic!("{name} not in the table"))
    }

    #[test]
    fn cookies_per_role() {
        let on = Mode { replayable: true, capture_data: false };
        let data = Mode { replayable: true, capture_data: true };
        for n in LOADS {
            let c = cookie(id(n), on);
            assert!(c.stop(), "{n}");
            assert_eq!(c.role(), role::LOAD, "{n}");
            assert!(needs_return(id(n), on));
            assert!(!needs_return(id(n), Mode::default()));
        }
        let k = cookie(id("cuLibraryGetKernel"), on);
        assert_eq!((k.role(), k.stop(), k.str_arg(), k.out_arg(0)), (role::GET_FUNCTION, false, Some(2), Some(0)));
        let f = cookie(id("cuModuleGetFunction"), on);
        assert_eq!((f.role(), f.str_arg(), f.out_arg(0)), (role::GET_FUNCTION, Some(2), Some(0)));
        assert_eq!(cookie(id("cuKernelGetFunction"), on).role(), role::ALIAS_LAYOUT);
        assert_eq!(cookie(id("cuLibraryGetModule"), on).role(), role::ALIAS_MODULE);
        let l = cookie(id("cuLaunchKernel"), on);
        assert_eq!((l.func_handle_arg(), l.kernel_params_arg(), l.extra_arg()), (0, Some(9), Some(10)));
        assert_eq!(l.stack_args(), 5);
        let e = cookie(id("cuLaunchKernelEx"), on);
        assert_eq!((e.func_handle_arg(), e.kernel_params_arg(), e.extra_arg()), (1, Some(2), Some(3)));
        assert!(e.launch_config());
        let co = cookie(id("cuLaunchCooperativeKernel"), on);
        assert_eq!((co.kernel_params_arg(), co.extra_arg()), (Some(9), None));
        assert_eq!(entry_program(id("cuLaunchKernelEx"), on, "cu_enter_blob"), "cu_launch");
        assert_eq!(entry_program(id("cuLaunchKernelEx"), Mode::default(), "cu_enter_blob"), "cu_enter_blob");
        for n in GRAPH_NODES {
            let g = cookie(id(n), on);
            assert_eq!((g.role(), g.stop()), (role::GRAPH_NODE, false), "{n}");
            assert_eq!(entry_program(id(n), on, "cu_enter_blob"), "cu_launch", "{n}");
            assert_eq!(entry_program(id(n), Mode::default(), "cu_enter_blob"), "cu_enter_blob", "{n}");
            assert!(!needs_return(id(n), on), "{n}");
            assert!(id(n).spec().unwrap().has_blob(), "{n}");
        }
        // The node lists stay in the graph bits (the launch bits are not set).
        let add = cookie(id("cuGraphAddKernelNode_v2"), on);
        assert_eq!(tracer_common::graph::node_lists(add), Some((2, 3, false)));
        assert_eq!(entry_program(id("cuGraphAddMemsetNode"), on, "cu_enter_blob"), "cu_enter_blob");
        // Copies stop the thread at their return, never at their entry.
        for n in ["cuMemcpyHtoD_v2", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoHAsync_v2"] {
            assert!(!cookie(id(n), on).stop() && !cookie(id(n), data).stop(), "{n}");
        }
        // The asynchronous device-to-host copy's return is probed, without a stop: it marks its
        // process for the next synchronization, whose return stops the thread only then.
        let d2h = id("cuMemcpyDtoHAsync_v2");
        assert!(needs_return(d2h, data) && !cookie(d2h, data).stop_at_return() && !stops_at_return(d2h, data));
        assert_eq!((cookie(d2h, data).role(), cookie(d2h, on).role()), (role::D2H_ASYNC, role::NONE));
        for n in [
            "cuStreamSynchronize",
            "cuStreamSynchronize_ptsz",
            "cuCtxSynchronize",
            "cuCtxSynchronize_v2",
            "cuEventSynchronize",
        ] {
            let c = cookie(id(n), data);
            assert_eq!(
                (c.role(), c.stop_at_return(), cookie(id(n), on).role()),
                (role::SYNC, false, role::NONE),
                "{n}"
            );
            assert!(needs_return(id(n), data) && !needs_return(id(n), on), "{n}");
            assert!(!role::saves_args(c.role()), "{n}");
        }
        for n in ["cuMemcpyHtoD_v2", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoH_v2"] {
            assert!(cookie(id(n), data).stop_at_return(), "{n}");
            assert!(!cookie(id(n), on).stop_at_return(), "{n}");
            assert!(needs_return(id(n), data) && !needs_return(id(n), on), "{n}");
        }
        // Off: exactly the table's cookie.
        for n in ["cuLaunchKernel", "cuLibraryLoadData", "cuLibraryGetKernel", "cuGraphAddKernelNode_v2"] {
            assert_eq!(cookie(id(n), Mode::default()), id(n).spec().unwrap().cookie(id(n)));
        }
    }
}
