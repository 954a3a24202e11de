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
}

impl StackOptions {
    pub const OFF: StackOptions = StackOptions { native: false, python: false, calls: false, switches: false };
    pub const ALL: StackOptions = StackOptions { native: true, python: true, calls: true, switches: true };

    pub fn any(&self) -> bool {
        (self.native || self.python) && (self.calls || self.switches)
    }

    /// The eBPF object's `STACKS` bits (tracer-ebpf/src/stack.rs).
    pub fn bits(&self) -> u32 {
        if !self.any() {
            return 0;
        }
        self.native as u32 | (self.python as u32) << 1 | (self.calls as u32) << 2 | (self.switches as u32) << 3
    }
}

/// Whether calls of `id` take a stack: kernel launches, graph launches,
/// copies, sets, and the synchronizations that wait (context, stream,
/// event). Polls (`cuStreamQuery`, `cuEventQuery`) and `cuStreamWaitEvent`
/// (which only orders GPU work) take none: they neither start GPU work nor
/// keep the thread waiting.
pub fn takes_stack(id: FuncId) -> bool {
    let Some(spec) = id.spec() else { return false };
    match spec.class {
        Class::Launch | Class::Copy | Class::Set => true,
        Class::Graph => base_name(spec.name) == "cuGraphLaunch",
        Class::Sync => {
            matches!(base_name(spec.name), "cuCtxSynchronize" | "cuStreamSynchronize" | "cuEventSynchronize")
        }
        _ => false,
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
    fn bits_follow_the_options() {
        assert_eq!(StackOptions::ALL.bits(), 0b1111);
        assert_eq!(StackOptions::OFF.bits(), 0);
        assert_eq!(StackOptions { python: false, ..StackOptions::ALL }.bits(), 0b1101);
        // Frames but no site, or sites but no frames: nothing taken.
        assert_eq!(StackOptions { calls: false, switches: false, ..StackOptions::ALL }.bits(), 0);
        assert_eq!(StackOptions { native: false, python: false, ..StackOptions::ALL }.bits(), 0);
    }
}
