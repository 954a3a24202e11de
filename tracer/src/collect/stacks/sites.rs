//! Where the kernel side takes stacks (tracer-ebpf/src/stack.rs): which
//! driver functions' calls (launches, graph launches, copies, sets and the
//! blocking synchronizations), and the switch-outs of traced threads.
use tracer_common::funcs::{Class, FuncId, base_name};

/// What stacks a recording takes (the `STACKS` global of the eBPF object).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackOptions {
    /// Native frames (frame pointers, `bpf_get_stack`).
    pub native: bool,
    /// CPython frames (the kernel's frame walker).
    pub python: bool,
    /// At the entry of the calls [`takes_stack`] names.
    pub calls: bool,
    /// When a traced thread switches out of its CPU (needs the scheduler
    /// probes).
    pub switches: bool,
    /// Every launch takes a stack (`--all-launch-stacks`), not only
    /// [`LAUNCH_IDLE_US`] / [`LAUNCH_INTERVAL_MS`]'s samples.
    pub every_launch: bool,
    /// On-CPU samples of the traced threads per second and CPU
    /// (`--stack-sample-hz`; 0: none). tracer-ebpf/src/sample.rs.
    pub sample_hz: u32,
}

/// `--stack-sample-hz`'s default: a prime, so that the samples do not beat
/// with periodic work (a 1 kHz timer, a 100 Hz loop).
pub const DEFAULT_SAMPLE_HZ: u32 = 997;

/// A launch takes a stack when its thread made no launch for this long or
/// was switched out since its last one (the launch ends a CPU-side gap)...
pub const LAUNCH_IDLE_US: u64 = 50;
/// ... and otherwise at most once per this interval per thread.
pub const LAUNCH_INTERVAL_MS: u64 = 10;

/// How calls of a function take stacks (the eBPF object's STACK_FUNCS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    /// Every call: copies, sets, synchronizations.
    Always = 1,
    /// Sampled: launches (kernel and graph), the bulk of the calls, whose
    /// stack costs several times the probe (docs/stacks.md).
    Sampled = 2,
}

impl StackOptions {
    pub const OFF: StackOptions =
        StackOptions { native: false, python: false, calls: false, switches: false, every_launch: false, sample_hz: 0 };
    pub const ALL: StackOptions = StackOptions {
        native: true,
        python: true,
        calls: true,
        switches: true,
        every_launch: false,
        sample_hz: DEFAULT_SAMPLE_HZ,
    };

    pub fn any(&self) -> bool {
        (self.native || self.python) && (self.calls || self.switches || self.sample_hz > 0)
    }

    /// The eBPF object's `STACKS` bits (tracer-ebpf/src/stack.rs).
    pub fn bits(&self) -> u32 {
        if !self.any() {
            return 0;
        }
        self.native as u32
            | (self.python as u32) << 1
            | (self.calls as u32) << 2
            | (self.switches as u32) << 3
            | ((self.sample_hz > 0) as u32) << 4
    }
}

/// Whether calls of `id` take a stack: kernel launches, graph launches,
/// copies, sets, and the synchronizations that wait (context, stream,
/// event). Polls (`cuStreamQuery`, `cuEventQuery`) and `cuStreamWaitEvent`
/// (which only orders GPU work) take none: they neither start GPU work nor
/// keep the thread waiting.
pub fn takes_stack(id: FuncId) -> bool {
    site(id, false).is_some()
}

/// How calls of `id` take stacks (None: never); `every_launch`: launches too
/// at every call.
pub fn site(id: FuncId, every_launch: bool) -> Option<Site> {
    let spec = id.spec()?;
    let launch = if every_launch { Site::Always } else { Site::Sampled };
    match spec.class {
        Class::Launch => Some(launch),
        Class::Graph if base_name(spec.name) == "cuGraphLaunch" => Some(launch),
        Class::Copy | Class::Set => Some(Site::Always),
        Class::Sync
            if matches!(base_name(spec.name), "cuCtxSynchronize" | "cuStreamSynchronize" | "cuEventSynchronize") =>
        {
            Some(Site::Always)
        }
        _ => None,
    }
}

/// The functions of the table that take a stack, by name (the header's
/// `stacks.calls`).
pub fn stack_functions() -> Vec<&'static str> {
    tracer_common::funcs::FUNCS
        .iter()
        .enumerate()
        .filter(|(i, _)| takes_stack(FuncId::new(*i, 0)))
        .map(|(_, s)| s.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracer_common::funcs::lookup;

    #[test]
    fn launches_copies_sets_and_waits_take_stacks() {
        for name in [
            "cuLaunchKernel",
            "cuLaunchKernel_ptsz",
            "cuLaunchKernelEx",
            "cuGraphLaunch",
            "cuMemcpyHtoDAsync_v2",
            "cuMemsetD32Async",
            "cuCtxSynchronize",
            "cuStreamSynchronize",
            "cuEventSynchronize",
        ] {
            assert!(takes_stack(lookup(name).unwrap()), "{name}");
        }
        for name in
            ["cuStreamQuery", "cuEventQuery", "cuStreamWaitEvent", "cuMemAlloc_v2", "cuGraphAddKernelNode", "cuInit"]
        {
            assert!(!takes_stack(lookup(name).unwrap()), "{name}");
        }
    }

    #[test]
    fn launches_are_sampled_unless_every_launch() {
        let l = lookup("cuLaunchKernel").unwrap();
        let g = lookup("cuGraphLaunch").unwrap();
        let c = lookup("cuMemcpyDtoH_v2").unwrap();
        assert_eq!(
            (site(l, false), site(g, false), site(c, false)),
            (Some(Site::Sampled), Some(Site::Sampled), Some(Site::Always))
        );
        assert_eq!(
            (site(l, true), site(g, true), site(c, true)),
            (Some(Site::Always), Some(Site::Always), Some(Site::Always))
        );
        assert_eq!(site(lookup("cuStreamQuery").unwrap(), true), None);
    }

    #[test]
    fn bits_follow_the_options() {
        assert_eq!(StackOptions::ALL.bits(), 0b11111);
        assert_eq!(StackOptions::OFF.bits(), 0);
        assert_eq!(StackOptions { python: false, ..StackOptions::ALL }.bits(), 0b11101);
        assert_eq!(StackOptions { python: false, sample_hz: 0, ..StackOptions::ALL }.bits(), 0b1101);
        // Frames but no site, or sites but no frames: nothing taken.
        assert_eq!(StackOptions { calls: false, switches: false, sample_hz: 0, ..StackOptions::ALL }.bits(), 0);
        assert_eq!(StackOptions { native: false, python: false, ..StackOptions::ALL }.bits(), 0);
    }
}

/// The footer's `stack_walks`: per site, the walks the kernel side took, their time (ns, measured
/// around each walk by the program that took it) and the Python frames' part of it, from the
/// summed per-CPU counters `sum` (tracer_common::stack::count's indices).
pub fn stack_walks_footer(sum: impl Fn(u32) -> u64) -> serde_json::Value {
    use tracer_common::stack::{count, site};
    let one = |s: u32| {
        serde_json::json!({
            "walks": sum(count::walks(s)),
            "ns": sum(count::walk_ns(s)),
            "python_ns": sum(count::walk_py_ns(s)),
        })
    };
    serde_json::json!({ "call": one(site::CALL), "switch_out": one(site::SWITCH_OUT), "sample": one(site::SAMPLE) })
}

#[cfg(test)]
mod walk_tests {
    use super::*;

    #[test]
    fn the_walk_counters_go_to_their_sites() {
        // counter i holds 100 + i: each site reads its own three
        let f = stack_walks_footer(|i| 100 + i as u64);
        assert_eq!(
            f,
            serde_json::json!({
                "call": {"walks": 102, "ns": 103, "python_ns": 104},
                "switch_out": {"walks": 105, "ns": 106, "python_ns": 107},
                "sample": {"walks": 108, "ns": 109, "python_ns": 110},
            })
        );
        assert_eq!(tracer_common::stack::count::N, 14);
        assert_eq!(tracer_common::stack::count::OWN_SWITCH_OUTS, 11);
    }
}
