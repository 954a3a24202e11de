//! The probe choices `tracer record` and `tracer agent` share, and what is
//! built from them: the loader's options, the libcuda watch, the call
//! assembler.
use std::path::Path;

use tracer_common::funcs::FuncId;

use crate::collect::libcuda::{self, ExportedSymbols};
use crate::collect::libcuda_watch::Watch;
use crate::collect::loader;
use crate::collect::replayable::probes;
use crate::collect::selection::KernelScope;
use crate::collect::stacks::sites::StackOptions;
use crate::decode::calls::Assembler;

/// Which calls get a return probe (`--returns`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Returns {
    /// All but launches and the other calls that never block.
    #[default]
    Default,
    All,
    None,
}

impl Returns {
    /// The name the header gives it (`return_probes`).
    pub fn name(self) -> &'static str {
        match self {
            Returns::Default => "default",
            Returns::All => "all",
            Returns::None => "none",
        }
    }
}

/// When the kernel side wakes the collector (`--wakeup`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Wakeup {
    /// When an eighth of the ring buffer is filled.
    #[default]
    Batched,
    /// At every record.
    Every,
}

/// Benchmarks only (`--bench-probe`): empty programs instead of tracer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchProbe {
    Empty,
    EmptyReturn,
    Filter,
    Ring,
}

/// `--ioctls`: how they are captured and the kprobed kernel functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoctlChoice {
    pub path: loader::IoctlPath,
    pub frontend_fn: String,
    pub uvm_fn: String,
}

/// What to probe and how: the loader's options but the libcuda, its
/// symbols and the kernel-side selection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeOptions {
    /// Scheduler events of the traced threads (not `--no-sched`).
    pub sched: bool,
    pub ebpf_log: bool,
    pub ioctls: Option<IoctlChoice>,
    pub returns: Returns,
    /// `--counts`: the entry-only-by-default functions counted in the kernel.
    pub counts: bool,
    /// `--all-functions`: also the noisy state getters.
    pub all_functions: bool,
    pub bench_probe: Option<BenchProbe>,
    pub bench_producer: bool,
    pub wakeup: Wakeup,
    /// The ring buffer's size in MiB.
    pub buffer_size_mib: u32,
    /// `--replayable`, `--capture-data`.
    pub replay: probes::Mode,
    /// Stacks (not `--no-stacks`; `tracer agent` takes none).
    pub stacks: StackOptions,
    /// The empty programs of the trap's measurement (collect/trap_cost.rs) are loaded with the
    /// probes' programs: recordings with BPF statistics and no benchmark probe measure the trap.
    pub trap_programs: bool,
}

impl ProbeOptions {
    /// Calls `f` with the loader's options for the libcuda at `libcuda_path`
    /// (empty: none yet).
    pub fn with_loader_options<R>(
        &self,
        libcuda_path: &Path,
        symbols: &ExportedSymbols,
        scope: KernelScope,
        f: impl FnOnce(&loader::Options) -> R,
    ) -> R {
        f(&loader::Options {
            scope,
            sched: self.sched,
            libcuda: libcuda_path,
            symbols,
            ebpf_log: self.ebpf_log,
            ioctls: self.ioctls.as_ref().map(|i| loader::IoctlOptions {
                path: i.path,
                frontend_fn: &i.frontend_fn,
                uvm_fn: &i.uvm_fn,
            }),
            return_probe: &|id| self.probed_return(id),
            programs: match self.bench_probe {
                None => loader::Programs::Tracer,
                Some(b) => {
                    let (entry, ret) = match b {
                        BenchProbe::Empty => ("cu_empty", None),
                        BenchProbe::EmptyReturn => ("cu_empty", Some("cu_empty_ret")),
                        BenchProbe::Filter => ("cu_bench_filter", None),
                        BenchProbe::Ring => ("cu_bench_ring", None),
                    };
                    loader::Programs::Bench { entry, ret }
                }
            },
            bench_producer: self
                .bench_producer
                .then(|| tracer_common::funcs::lookup("cuLaunchKernel").expect("in the table")),
            wakeup_bytes: match self.wakeup {
                Wakeup::Batched => self.buffer_size_mib as u64 * 1024 * 1024 / 8,
                Wakeup::Every => 0,
            },
            select: &|id| self.left_out(id).is_none(),
            counted: &|id| self.counted(id),
            ring_bytes: self.buffer_size_mib * 1024 * 1024,
            replay: self.replay,
            stacks: self.stacks,
            trap_programs: self.trap_programs,
        })
    }

    /// Whether a probed function gets the return probe: the `--returns`
    /// choice, and under `--replayable` always for the loads and GetFunction
    /// calls (rare; the layout chain needs their results).
    pub fn probed_return(&self, id: FuncId) -> bool {
        if self.counted(id) {
            return false;
        }
        returns_probed(self.returns, id) || probes::needs_return(id, self.replay)
    }

    /// `--counts`: whether a function is counted in the kernel instead of
    /// recorded (the functions probed entry-only by default).
    pub fn counted(&self, id: FuncId) -> bool {
        self.counts && tracer_common::funcs::is_entry_only_by_default(id)
    }

    /// Why a table function is left out (None: it is probed).
    pub fn left_out(&self, id: FuncId) -> Option<&'static str> {
        left_out(self.all_functions, id)
    }
}

/// Why a table function is left out of a recording (None: it is probed).
pub fn left_out(all_functions: bool, id: FuncId) -> Option<&'static str> {
    (!all_functions && tracer_common::funcs::is_noisy(id))
        .then_some("a state getter left out by default (--all-functions records it)")
}

/// Whether a probed function gets the return probe under `mode`.
fn returns_probed(mode: Returns, id: FuncId) -> bool {
    match mode {
        Returns::All => true,
        Returns::None => false,
        Returns::Default => !tracer_common::funcs::is_entry_only_by_default(id),
    }
}

/// The watch of further libcuda files (libcuda_watch.rs), each probed with
/// `probes` as it is found.
pub fn watch(probes: &ProbeOptions, scope: KernelScope) -> Watch<'_> {
    Watch::new(Box::new(move |loaded: &mut loader::Loaded, via: &Path| {
        let syms = libcuda::exported_functions(via)?;
        let r = probes.with_loader_options(via, &syms, scope, |o| loader::attach_libcuda(loaded, o))?;
        Ok(r.probed.len())
    }))
}

/// The call assembler: the stack resolver, which functions have no return probe, copy value
/// lines (`--capture-data`), the ioctl decoder of the probed path, and the
/// scheduler tracker (with `fd_kinds`, the kind of file a thread waited on).
pub fn assembler(probes: &ProbeOptions, loaded: &loader::Loaded, fd_kinds: bool) -> Assembler {
    let mut asm = Assembler::with_string_reader(Box::new(crate::collect::procmem::read_proc_string));
    // Stack records: frames symbolized and Python code objects read (collect/stacks/).
    let python_version = crate::collect::stacks::python_version::cached();
    asm.stacks = crate::decode::stacks::Stacks::with_resolver(Box::new(
        crate::collect::stacks::resolver::Resolver::new(python_version),
    ));
    asm.set_entry_only(|id| !probes.probed_return(id));
    asm.value_copy_lines = probes.replay.capture_data;
    if probes.counts {
        asm.exited_names = Some(Default::default());
    }
    asm.ioctls = crate::decode::ioctls::Ioctls::new(loaded.report.ioctl_path.unwrap_or("none"));
    if probes.sched {
        match fd_kinds {
            true => {
                asm.sched =
                    crate::decode::sched::SchedTracker::with_fd_reader(Box::new(crate::collect::procfs::fd_kind))
            }
            false => asm.sched.enabled = true,
        }
        asm.sched.recorder_pid = Some(std::process::id());
    }
    asm
}

/// The libcuda probed from the start: `explicit` (`--libcuda`), else the
/// one the first of `pids` mapped, else the one the library path of
/// `ld_path_of` (tracer's own: None) finds in tracer's mount namespace.
pub fn find_libcuda(
    explicit: Option<&Path>,
    pids: &[u32],
    ld_path_of: Option<u32>,
) -> anyhow::Result<std::path::PathBuf> {
    match (explicit, pids.iter().find_map(|&p| crate::collect::procfs::mapped_libcuda(p))) {
        (Some(p), _) => libcuda::resolve_libcuda(Some(p), None),
        (None, Some(mapped)) => Ok(mapped),
        (None, None) => {
            libcuda::resolve_libcuda(None, crate::collect::procfs::target_ld_library_path(ld_path_of).as_deref())
        }
    }
}
