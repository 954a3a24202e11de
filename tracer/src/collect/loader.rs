//! Loads the eBPF object, attaches the sched tracepoints and the uprobes on
//! libcuda, and hands out the maps the collector needs.
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use aya::{
    Ebpf, EbpfLoader,
    maps::{HashMap as BpfHashMap, MapData, PerCpuArray, RingBuf},
    programs::{
        KProbe, RawTracePoint, TracePoint, UProbe,
        kprobe::KProbeLink,
        raw_trace_point::RawTracePointLink,
        trace_point::TracePointLink,
        uprobe::{UProbeAttachLocation, UProbeAttachPoint, UProbeLink, UProbeScope},
    },
};
use tracer_common::{
    event::{UvmCapture, counter},
    funcs::{Arg, FUNCS, FuncId, VARIANTS},
};

use crate::collect::libcuda::ExportedSymbols;
use crate::collect::uprobe_multi::{self, MultiLink};

pub const TRACEFS: &str = "/sys/kernel/tracing";

/// The eBPF object built by build.rs from tracer-ebpf.
static EBPF_OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/tracer"));

/// The most unread ring-buffer bytes above which switch-out and sample stacks are shed
/// (tracer-ebpf stack.rs `SHED_BYTES`; a quarter of a smaller ring): 4 MiB, a few thousand
/// stack records, some 0.1-0.2 s of a collector that resolves stacks slower than they come.
/// A larger backlog delays what the collector does on time (window demands, the agent's
/// scrapes) and, further, fills the ring, losing records every line needs.
pub const SHED_BYTES_MAX: u64 = 4 << 20;

/// What got attached, for the header and the summary.
#[derive(Debug, Default, Clone)]
pub struct ProbeReport {
    pub libcuda: PathBuf,
    pub exported_functions: usize,
    /// Exported functions whose first instruction is `push %rbp`.
    pub exported_push_rbp: usize,
    /// Probed symbols (entry + return each).
    pub probed: Vec<String>,
    /// Probed symbols whose first instruction is not `push %rbp` (slow path).
    pub single_stepped: Vec<String>,
    /// Exported table functions left out by the selection (--all-functions).
    pub not_probed: Vec<String>,
    /// How NVIDIA ioctls are captured ("kprobe" or "tracepoint"), None when off.
    pub ioctl_path: Option<&'static str>,
    /// Paths tried before, with the reason each was refused.
    pub ioctl_path_refusals: Vec<(&'static str, String)>,
    /// "uprobe_multi" (one link per program) or "perf" (one per function).
    pub attach_mode: &'static str,
    /// Exported `cu*` functions outside the table, counted by `cu_count` (entry_points.rs).
    pub counted_unrecorded: Vec<String>,
    /// Exported `cu*` functions outside the table that are not even counted, and why.
    pub not_counted: Vec<(String, &'static str)>,
    /// How scheduler events are captured (`raw_tracepoint` or `tracepoint`), None when off.
    pub sched_path: Option<&'static str>,
    /// On-CPU stack samples per second and CPU as attached (0: off or refused).
    pub stack_sample_hz: u32,
    /// Why the sampling perf events could not be attached (then 0 above).
    pub stack_sample_error: Option<String>,
    /// Why Python frames are off although asked for (the kernel's verifier).
    pub python_frames_error: Option<String>,
}

pub struct Loaded {
    /// Owns the programs; the links are in `links`.
    pub ebpf: Option<Ebpf>,
    /// Every attachment, owned here so [`detach_all`] can close them
    /// concurrently.
    pub links: Links,
    /// Taken by the collector.
    pub ring: Option<RingBuf<MapData>>,
    /// aya-log reader when --ebpf-log is given.
    pub logger: Option<aya_log::EbpfLogger<&'static dyn log::Log>>,
    pub counters: PerCpuArray<MapData, u64>,
    pub traced: BpfHashMap<MapData, u32, u8>,
    /// Generation of `traced` (slot 1 is userspace's): bumped after every
    /// change made here, so the programs' per-CPU verdict caches refresh.
    pub traced_gen: aya::maps::Array<MapData, u64>,
    /// (tgid << 32 | fd) -> NVIDIA device kind, for fds opened before attach.
    pub nvfds: BpfHashMap<MapData, u64, u32>,
    /// `--counts`: the kernel's per-function and per-kernel counts.
    pub counts: Option<crate::collect::counts::CountMaps>,
    pub report: ProbeReport,
    /// Opens of libcuda files by watched processes (libcuda_watch.rs).
    pub libopens: Option<RingBuf<MapData>>,
    pub libopen_lost: PerCpuArray<MapData, u64>,
    /// tgid -> cgroup id at its first call (`--system`, `--cgroup`).
    pub pid_cgroup: Option<BpfHashMap<MapData, u32, u64>>,
    /// The same, tgid -> comm (tracer-ebpf/src/select.rs).
    pub pid_comm: Option<BpfHashMap<MapData, u32, [u8; 16]>>,
    /// The uprobe programs loaded for uprobe_multi (None: the kernel has no
    /// uprobe_multi, perf events are used), kept for later libcuda files:
    /// they cannot be loaded again once the maps are taken.
    pub multi_progs: Option<uprobe_multi::MultiPrograms>,
    /// tgid -> its Python interpreter's layout (tracer-ebpf/src/pystack.rs).
    pub py_procs: Option<BpfHashMap<MapData, u32, tracer_common::stack::PyLayout>>,
    /// Per CPU: launches sampled out and in (tracer-ebpf/src/stack.rs `count`).
    pub stack_counts: Option<PerCpuArray<MapData, u64>>,
}

/// Reads a field offset from a tracepoint's format file.
fn field_offset(format: &str, field: &str) -> Option<u32> {
    format.lines().find_map(|l| {
        let l = l.trim();
        let decl = l.strip_prefix("field:")?.split(';').next()?;
        let name = decl.split_whitespace().last()?.trim_start_matches('*');
        let name = name.split('[').next()?;
        if name != field {
            return None;
        }
        let off = l.split("offset:").nth(1)?.split(';').next()?;
        off.trim().parse().ok()
    })
}

fn tp_offset(category: &str, name: &str, field: &str) -> anyhow::Result<Option<u32>> {
    let path = format!("{TRACEFS}/events/{category}/{name}/format");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    Ok(field_offset(&text, field))
}

/// Mounts tracefs if it is missing (we are root); a clear error otherwise.
pub fn ensure_tracefs() -> anyhow::Result<()> {
    if Path::new(TRACEFS).join("events").is_dir() {
        return Ok(());
    }
    let st = std::process::Command::new("mount").args(["-t", "tracefs", "nodev", TRACEFS]).status();
    if Path::new(TRACEFS).join("events").is_dir() {
        return Ok(());
    }
    bail!(
        "tracefs is not mounted at {TRACEFS} and mounting it failed ({}): run `mount -t tracefs nodev {TRACEFS}` as root",
        match st {
            Ok(s) => s.to_string(),
            Err(e) => e.to_string(),
        }
    )
}

pub struct Options<'a> {
    pub libcuda: &'a Path,
    /// Unconsumed ring-buffer bytes that make a record wake the collector
    /// (0: every record wakes it).
    pub wakeup_bytes: u64,
    /// Capture syscalls on NVIDIA device files, and how.
    pub ioctls: Option<IoctlOptions<'a>>,
    /// Which probed functions also get the return probe (results, durations).
    pub return_probe: &'a dyn Fn(FuncId) -> bool,
    /// Benchmarks: which programs go on the probed functions.
    pub programs: Programs,
    /// Benchmarks: emit a record of this function at every getppid() of a
    /// traced process.
    pub bench_producer: Option<FuncId>,
    /// Enable the eBPF programs' aya-log diagnostics.
    pub ebpf_log: bool,
    /// Which table functions to probe.
    pub select: &'a dyn Fn(FuncId) -> bool,
    pub symbols: &'a ExportedSymbols,
    pub ring_bytes: u32,
    /// `--replayable` / `--capture-data`.
    pub replay: crate::collect::replayable::probes::Mode,
    /// `--counts`: the functions counted in kernel maps (`cu_count`)
    /// instead of recorded call by call.
    pub counted: &'a dyn Fn(FuncId) -> bool,
    /// Which processes the probes record (`--system`, `--cgroup`).
    pub scope: crate::collect::selection::KernelScope,
    /// Scheduler events of the traced threads (tracer-ebpf/src/sched.rs).
    pub sched: bool,
    /// Stacks (tracer-ebpf/src/stack.rs).
    pub stacks: crate::collect::stacks::sites::StackOptions,
    /// Load the trap measurement's empty programs (`cu_empty`, `cu_empty_ret`) too.
    pub trap_programs: bool,
}

/// The programs attached to the probed functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Programs {
    /// tracer's entry and return programs.
    Tracer,
    /// Benchmarks: programs of tracer-ebpf/src/bench.rs (the empty ones give
    /// the probe mechanism's floor), at entry and optionally at return.
    Bench { entry: &'static str, ret: Option<&'static str> },
}

/// The oldest kernel on which the CPython frame walker (tracer-ebpf
/// pystack.rs) was seen to pass the verifier: 6.18 here; Debian 12's 6.1
/// rejects it (1M instructions processed), kernels between are untested.
const PYTHON_WALKER_KERNEL: (u32, u32) = (6, 18);

fn python_walker_loads() -> bool {
    use aya::util::KernelVersion;
    KernelVersion::current()
        .is_ok_and(|v| v >= KernelVersion::new(PYTHON_WALKER_KERNEL.0 as u8, PYTHON_WALKER_KERNEL.1 as u8, 0))
}

pub fn load(opts: &Options) -> anyhow::Result<Loaded> {
    ensure_tracefs()?;
    let need = |c, n, f| -> anyhow::Result<u32> {
        tp_offset(c, n, f)?.with_context(|| format!("tracepoint {c}/{n} has no field {f}: unsupported kernel"))
    };
    let fork_child = need("sched", "sched_process_fork", "child_pid")?;
    let exec_file = need("sched", "sched_process_exec", "filename")?;
    let exit_pid = need("sched", "sched_process_exit", "pid")?;
    let exit_group_dead = tp_offset("sched", "sched_process_exit", "group_dead")?.unwrap_or(0);
    // The raw scheduler tracepoints need the task_struct offsets (BTF) and
    // sched_switch's prev_state argument (5.18); else the classic ones.
    let raw_sched_ok = aya::util::KernelVersion::current().is_ok_and(|v| v >= aya::util::KernelVersion::new(5, 18, 0));
    let task_offsets = if opts.sched && raw_sched_ok {
        match crate::collect::btf::task_offsets() {
            Ok(o) => Some(o),
            Err(e) => {
                log::info!("scheduler events through the classic tracepoints: {e:#}");
                None
            }
        }
    } else {
        None
    };
    let sched_offsets = if opts.sched {
        Some([
            ("SWITCH_PREV_STATE_OFF", need("sched", "sched_switch", "prev_state")?),
            ("SWITCH_NEXT_COMM_OFF", need("sched", "sched_switch", "next_comm")?),
            ("SWITCH_NEXT_PID_OFF", need("sched", "sched_switch", "next_pid")?),
            ("WAKING_PID_OFF", need("sched", "sched_waking", "pid")?),
            ("WAKING_TARGET_CPU_OFF", need("sched", "sched_waking", "target_cpu")?),
        ])
    } else {
        None
    };

    let log_enabled = opts.ebpf_log as u32;
    let bench_func = opts.bench_producer.map_or(0, |f| f.0 as u32);
    // --system / --cgroup never select the tracer itself (select.rs).
    let self_tgid = std::process::id();
    let mut stacks = opts.stacks;
    let mut python_frames_error = None;
    if stacks.python && !python_walker_loads() {
        let why = format!(
            "the kernel's verifier rejects the frame walker before Linux {}.{} (6.1 stops it at 1M instructions)",
            PYTHON_WALKER_KERNEL.0, PYTHON_WALKER_KERNEL.1
        );
        log::warn!("Python frames off: {why}; native frames only");
        python_frames_error = Some(why);
        stacks.python = false;
    }
    let stack_bits = stacks.bits();
    // Python before 3.11 names a thread by its fs base (pystack.rs).
    let fsbase_off = match stacks.python && stack_bits != 0 {
        true => crate::collect::btf::fsbase_offset().unwrap_or_else(|e| {
            log::info!("Python 3.10 stacks unavailable: {e:#}");
            0
        }),
        false => 0,
    };
    // optional stacks are shed above a quarter of the ring unread, at most SHED_BYTES_MAX
    // (tracer-ebpf stack.rs)
    let shed_bytes = (opts.ring_bytes as u64 / 4).min(SHED_BYTES_MAX);
    let mut loader = EbpfLoader::new();
    loader
        .override_global("FORK_CHILD_PID_OFF", &fork_child, true)
        .override_global("EXEC_FILENAME_OFF", &exec_file, true)
        .override_global("EXIT_PID_OFF", &exit_pid, true)
        .override_global("EXIT_GROUP_DEAD_OFF", &exit_group_dead, true)
        .override_global("LOG_ENABLED", &log_enabled, true)
        .override_global("WAKEUP_BYTES", &opts.wakeup_bytes, true)
        .override_global("SHED_BYTES", &shed_bytes, true)
        .override_global("BENCH_FUNC", &bench_func, true)
        .override_global("SELECT_MODE", &opts.scope.mode, true)
        .override_global("SELECT_CGROUP_ID", &opts.scope.cgroup_id, true)
        .override_global("SELECT_CGROUP_LEVEL", &opts.scope.cgroup_level, true)
        .override_global("SELECT_SELF_TGID", &self_tgid, true)
        .override_global("STACKS", &stack_bits, true)
        .override_global("TASK_FSBASE_OFF", &fsbase_off, true)
        .override_global("STACK_IDLE_NS", &(crate::collect::stacks::sites::LAUNCH_IDLE_US * 1000), true)
        .override_global("STACK_INTERVAL_NS", &(crate::collect::stacks::sites::LAUNCH_INTERVAL_MS * 1_000_000), true)
        .map_max_entries("EVENTS", opts.ring_bytes);
    for (name, off) in sched_offsets.iter().flatten() {
        loader.override_global(name, off, true);
    }
    let task_globals =
        task_offsets.map(|o| [("TASK_PID_OFF", o.pid), ("TASK_TGID_OFF", o.tgid), ("TASK_COMM_OFF", o.comm)]);
    for (name, off) in task_globals.iter().flatten() {
        loader.override_global(name, off, true);
    }
    if opts.replay.replayable {
        // Sizes of the layout maps (docs/recording-format.md); the launch
        // scratch record needs one slot per possible CPU.
        let cpus = aya::util::nr_cpus().map_err(|(_, e)| e).context("counting CPUs")? as u32;
        for (map, n) in [
            // 268 bytes each, preallocated (an array): 4.4 MB.
            ("LAYOUTS", 1 << 14),
            ("LAYOUT_BY_NAME", 1 << 20),
            ("LAYOUT_BY_HANDLE", 1 << 18),
            ("MODULE_IMAGE", 1 << 16),
            ("PENDING_IMAGE", 1 << 14),
            // One entry per traced process with device-to-host bytes to read.
            ("PENDING_D2H", 1 << 14),
            ("ROLE_ARGS", 1 << 16),
            ("SCRATCH", cpus),
        ] {
            loader.map_max_entries(map, n);
        }
    }
    // The scheduler programs' per-CPU watch counts (tracer-ebpf/src/sched.rs).
    let possible = aya::util::nr_cpus().map_err(|(_, e)| e).context("counting the possible CPUs")?;
    loader.map_max_entries("WATCH", possible.max(1) as u32);
    // --counts: one slot per function id; kernels per (process, handle).
    loader.map_max_entries("CALL_COUNTS", crate::collect::counts::FUNC_SLOTS);
    loader.map_max_entries("KERNEL_COUNTS", crate::collect::counts::KERNEL_SLOTS);
    let mut ebpf = loader.load(EBPF_OBJECT).context("loading the eBPF programs failed")?;

    let mut links = Links::default();
    for (prog, tp) in [
        ("sched_fork", "sched_process_fork"),
        ("sched_exec", "sched_process_exec"),
        ("sched_exit", "sched_process_exit"),
    ] {
        let p: &mut TracePoint = ebpf.program_mut(prog).context(prog)?.try_into()?;
        p.load().with_context(|| format!("loading {prog}"))?;
        let id = p.attach("sched", tp).with_context(|| format!("attaching to sched/{tp}"))?;
        links.tracepoints.push(p.take_link(id)?);
    }

    let sched_path = match (opts.sched, task_offsets.is_some()) {
        (false, _) => None,
        (true, true) => match attach_sched_raw(&mut ebpf, &mut links) {
            Ok(()) => Some("raw_tracepoint"),
            Err(e) => {
                log::info!("scheduler events through the classic tracepoints: {e:#}");
                attach_sched_classic(&mut ebpf, &mut links)?;
                Some("tracepoint")
            }
        },
        (true, false) => {
            attach_sched_classic(&mut ebpf, &mut links)?;
            Some("tracepoint")
        }
    };

    // No libcuda in tracer's mount namespace: the watch attaches the ones
    // the processes open (libcuda_watch.rs).
    let multi_progs = match multi_programs(&ebpf, opts) {
        Ok(p) => Some(p),
        Err(e) => {
            log::warn!(
                "uprobe_multi unavailable ({e:#}); attaching one perf event per function (detaching will be slow)"
            );
            None
        }
    };
    let mut multi_progs = multi_progs;
    let mut report = if opts.libcuda.as_os_str().is_empty() {
        let mode = if multi_progs.is_some() { "uprobe_multi" } else { "perf" };
        ProbeReport { attach_mode: mode, ..Default::default() }
    } else {
        attach_uprobes(&mut ebpf, opts, &mut links, multi_progs.as_ref())?
    };
    report.sched_path = sched_path;
    report.python_frames_error = python_frames_error;
    if opts.stacks.sample_hz > 0 && stack_bits & (1 << 4) != 0 {
        match attach_samples(&mut ebpf, &mut links, opts.stacks.sample_hz) {
            Ok(()) => report.stack_sample_hz = opts.stacks.sample_hz,
            Err(e) => {
                log::warn!("no on-CPU stack samples: {e:#}");
                report.stack_sample_error = Some(format!("{e:#}"));
            }
        }
    }
    if report.attach_mode == "perf" {
        // Later libcuda files go the same way.
        multi_progs = None;
    }
    attach_tps(
        &mut ebpf,
        &mut links,
        &[("lib_openat_enter", "sys_enter_openat"), ("lib_openat_exit", "sys_exit_openat")],
    )?;
    if opts.bench_producer.is_some() {
        attach_tps(&mut ebpf, &mut links, &[("bench_producer", "sys_enter_getppid")])?;
    }
    if let Some(o) = &opts.ioctls {
        attach_nvfile(&mut ebpf, &mut links, o, &mut report)?;
    }
    let logger = if opts.ebpf_log {
        Some(aya_log::EbpfLogger::init(&mut ebpf).context("starting the eBPF logger")?)
    } else {
        None
    };

    let ring = RingBuf::try_from(ebpf.take_map("EVENTS").context("EVENTS map")?)?;
    let counters = PerCpuArray::try_from(ebpf.take_map("COUNTERS").context("COUNTERS map")?)?;
    let traced = BpfHashMap::try_from(ebpf.take_map("TRACED").context("TRACED map")?)?;
    let traced_gen = aya::maps::Array::try_from(ebpf.take_map("TRACED_GEN").context("TRACED_GEN map")?)?;
    let nvfds = BpfHashMap::try_from(ebpf.take_map("NVFDS").context("NVFDS map")?)?;
    let counts = crate::collect::counts::CountMaps::take(&mut ebpf)?;
    let libopens = Some(RingBuf::try_from(ebpf.take_map("LIBOPENS").context("LIBOPENS map")?)?);
    let libopen_lost = PerCpuArray::try_from(ebpf.take_map("LIBOPEN_LOST").context("LIBOPEN_LOST map")?)?;
    let pid_cgroup = Some(BpfHashMap::try_from(ebpf.take_map("PID_CGROUP").context("PID_CGROUP map")?)?);
    let pid_comm = Some(BpfHashMap::try_from(ebpf.take_map("PID_COMM").context("PID_COMM map")?)?);
    if stack_bits != 0 {
        let mut funcs: aya::maps::Array<_, u8> =
            aya::maps::Array::try_from(ebpf.map_mut("STACK_FUNCS").context("STACK_FUNCS map")?)?;
        for i in 0..tracer_common::funcs::FUNCS.len() {
            for v in 0..tracer_common::funcs::VARIANTS.len() {
                let id = FuncId::new(i, v);
                if let Some(site) = crate::collect::stacks::sites::site(id, opts.stacks.every_launch) {
                    funcs.set(id.0 as u32, site as u8, 0).context("filling STACK_FUNCS")?;
                }
            }
        }
    }
    let py_procs = Some(BpfHashMap::try_from(ebpf.take_map("PY_PROCS").context("PY_PROCS map")?)?);
    let stack_counts = Some(PerCpuArray::try_from(ebpf.take_map("STACK_COUNTS").context("STACK_COUNTS map")?)?);
    Ok(Loaded {
        ebpf: Some(ebpf),
        links,
        logger,
        ring: Some(ring),
        counters,
        traced,
        traced_gen,
        nvfds,
        counts: Some(counts),
        report,
        libopens,
        libopen_lost,
        pid_cgroup,
        pid_comm,
        multi_progs,
        py_procs,
        stack_counts,
    })
}

/// The empty programs loaded for uprobe_multi with the recording's ([`multi_programs`]: the
/// object is relocated once, against the maps as loaded), with which
/// [`crate::collect::trap_cost`] measures the uprobe trap on this machine.
pub fn trap_programs(loaded: &Loaded) -> anyhow::Result<&crate::collect::uprobe_multi::MultiPrograms> {
    loaded
        .multi_progs
        .as_ref()
        .context("the probes are attached one by one (no uprobe_multi): the trap is not measured")
}

/// Attaches the probes to one more libcuda file (another inode than those
/// probed already: uprobes are per inode, a second attach would double
/// every call). `opts.libcuda` may be any path to it, `/proc/PID/fd/FD`
/// or `/proc/PID/root/...` included.
pub fn attach_libcuda(loaded: &mut Loaded, opts: &Options) -> anyhow::Result<ProbeReport> {
    let ebpf = loaded.ebpf.as_mut().context("eBPF object gone")?;
    let mut links = Links::default();
    let report = attach_uprobes(ebpf, opts, &mut links, loaded.multi_progs.as_ref())?;
    if report.attach_mode == "perf" {
        loaded.multi_progs = None;
    }
    loaded.links.multi.extend(links.multi);
    loaded.links.uprobes.extend(links.uprobes);
    Ok(report)
}

impl Loaded {
    /// Marks a process traced (its threads and children follow in the
    /// kernel) and tells the programs' caches.
    pub fn mark_traced(&mut self, pid: u32) -> anyhow::Result<()> {
        self.traced.insert(pid, 1, 0).with_context(|| format!("marking process {pid} traced"))?;
        let g = self.traced_gen.get(&1, 0).unwrap_or(0);
        self.traced_gen.set(1, g.wrapping_add(1), 0).context("updating TRACED_GEN")?;
        Ok(())
    }
}

/// How ioctls on NVIDIA devices are captured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoctlPath {
    /// kprobe, else tracepoints.
    Auto,
    Kprobe,
    Tracepoint,
}

pub struct IoctlOptions<'a> {
    pub path: IoctlPath,
    /// Function kprobed for /dev/nvidiactl and /dev/nvidiaN ioctls.
    pub frontend_fn: &'a str,
    /// Function kprobed for /dev/nvidia-uvm ioctls ("" to skip).
    pub uvm_fn: &'a str,
}

/// Attaches the syscall tracepoints for NVIDIA device files, then captures
/// ioctls through kprobes on the driver's ioctl entry points where the
/// kernel allows it, else through the ioctl syscall tracepoints. Fills the
/// UVM capture table. Records every path tried and why it was refused.
fn attach_nvfile(ebpf: &mut Ebpf, links: &mut Links, o: &IoctlOptions, report: &mut ProbeReport) -> anyhow::Result<()> {
    {
        let mut uvm: BpfHashMap<_, u32, UvmCapture> =
            BpfHashMap::try_from(ebpf.map_mut("UVM_SIZES").context("UVM_SIZES map")?)?;
        for (num, _) in crate::decode::nvioctl::uvm_ioctls() {
            let size = crate::decode::nvioctl::uvm_param_size(num as u64).unwrap_or(0) as u32;
            let (tail_off, tail_len) = crate::decode::ioctls::uvm_tail(size);
            uvm.insert(num, UvmCapture { size, tail_off, tail_len, _pad: 0 }, 0)?;
        }
    }
    attach_tps(
        ebpf,
        links,
        &[
            ("nv_openat_enter", "sys_enter_openat"),
            ("nv_openat_exit", "sys_exit_openat"),
            ("nv_close_enter", "sys_enter_close"),
            ("nv_dup_enter", "sys_enter_dup2"),
            ("nv_dup_enter", "sys_enter_dup3"),
            ("nv_mmap_enter", "sys_enter_mmap"),
            ("nv_mmap_exit", "sys_exit_mmap"),
            ("nv_munmap_enter", "sys_enter_munmap"),
        ],
    )?;
    if o.path != IoctlPath::Tracepoint {
        match attach_kprobes(ebpf, links, o) {
            Ok(()) => {
                report.ioctl_path = Some("kprobe");
                return Ok(());
            }
            Err(e) if o.path == IoctlPath::Kprobe => return Err(e),
            Err(e) => {
                report.ioctl_path_refusals.push(("kprobe", format!("{e:#}")));
                // fentry/fexit on a module function needs the module's BTF
                // object fd at load time, which aya 0.14 cannot pass
                // (upstream aya issues #300/#301); on our machines fentry
                // loads are refused with EPERM anyway.
                report.ioctl_path_refusals.push((
                    "fentry",
                    "not attempted: aya 0.14 cannot attach fentry/fexit to module functions (no split-BTF / attach_btf_obj_fd support)".to_string(),
                ));
            }
        }
    }
    attach_tps(ebpf, links, &[("nv_ioctl_enter", "sys_enter_ioctl"), ("nv_ioctl_exit", "sys_exit_ioctl")])?;
    report.ioctl_path = Some("tracepoint");
    Ok(())
}

/// The on-CPU stack sampler (tracer-ebpf/src/sample.rs): one perf event of
/// the CPU clock per online CPU, at `hz` samples per second.
fn attach_samples(ebpf: &mut Ebpf, links: &mut Links, hz: u32) -> anyhow::Result<()> {
    use aya::programs::perf_event::{PerfEventConfig, PerfEventScope, SamplePolicy, SoftwareEvent};
    let p: &mut aya::programs::PerfEvent = ebpf.program_mut("stack_sample").context("stack_sample")?.try_into()?;
    p.load().context("loading stack_sample")?;
    let cpus = aya::util::online_cpus().map_err(|(_, e)| e).context("listing the online CPUs")?;
    let mut got = vec![];
    for cpu in cpus {
        let id = p
            .attach(
                PerfEventConfig::Software(SoftwareEvent::CpuClock),
                PerfEventScope::AllProcessesOneCpu { cpu },
                SamplePolicy::Frequency(hz as u64),
                false,
            )
            .with_context(|| format!("perf_event_open of the CPU clock on CPU {cpu}"))?;
        got.push(p.take_link(id)?);
    }
    links.perf_events.extend(got);
    Ok(())
}

/// The raw sched_switch and sched_waking programs (tracer-ebpf/src/sched.rs).
fn attach_sched_raw(ebpf: &mut Ebpf, links: &mut Links) -> anyhow::Result<()> {
    let mut got = vec![];
    for (prog, tp) in [("sched_switch_raw", "sched_switch"), ("sched_waking_raw", "sched_waking")] {
        let p: &mut RawTracePoint = ebpf.program_mut(prog).context(prog)?.try_into()?;
        p.load().with_context(|| format!("loading {prog}"))?;
        let id = p.attach(tp).with_context(|| format!("attaching to the raw tracepoint {tp}"))?;
        got.push(p.take_link(id)?);
    }
    links.raw_tracepoints.extend(got);
    Ok(())
}

/// The classic sched_switch and sched_waking tracepoints.
fn attach_sched_classic(ebpf: &mut Ebpf, links: &mut Links) -> anyhow::Result<()> {
    for (prog, tp) in [("sched_switch", "sched_switch"), ("sched_waking", "sched_waking")] {
        let p: &mut TracePoint = ebpf.program_mut(prog).context(prog)?.try_into()?;
        p.load().with_context(|| format!("loading {prog} (--no-sched records without scheduler events)"))?;
        let id = p.attach("sched", tp).with_context(|| format!("attaching to sched/{tp}"))?;
        links.tracepoints.push(p.take_link(id)?);
    }
    Ok(())
}

/// Attaches syscall tracepoint programs (a program may serve several).
fn attach_tps(ebpf: &mut Ebpf, links: &mut Links, list: &[(&str, &str)]) -> anyhow::Result<()> {
    for &(prog, tp) in list {
        let p: &mut TracePoint = ebpf.program_mut(prog).context(prog.to_string())?.try_into()?;
        if p.fd().is_err() {
            p.load().with_context(|| format!("loading {prog}"))?;
        }
        let id = p.attach("syscalls", tp).with_context(|| format!("attaching to syscalls/{tp}"))?;
        links.tracepoints.push(p.take_link(id)?);
    }
    Ok(())
}

fn attach_kprobes(ebpf: &mut Ebpf, links: &mut Links, o: &IoctlOptions) -> anyhow::Result<()> {
    let mut attached = Vec::new();
    let mut targets = vec![("nv_kp_frontend", o.frontend_fn)];
    if !o.uvm_fn.is_empty() {
        targets.push(("nv_kp_uvm", o.uvm_fn));
    }
    for (i, (prog, func)) in targets.into_iter().enumerate() {
        let r = kprobe(ebpf, prog, func, "kprobe").and_then(|entry| {
            attached.push(entry);
            attached.push(kprobe(ebpf, "nv_krp_ioctl", func, "kretprobe")?);
            Ok(())
        });
        match r {
            Ok(()) => {}
            // The frontend entry point is required; UVM's is optional
            // (nvidia_uvm may not be loaded).
            Err(e) if i == 0 => return Err(e),
            Err(e) => log::warn!("UVM ioctls not captured by kprobe: {e:#}"),
        }
    }
    links.kprobes.extend(attached);
    Ok(())
}

/// Loads program `prog` (once: it may serve several functions) and attaches
/// it to kernel function `func`.
fn kprobe(ebpf: &mut Ebpf, prog: &str, func: &str, what: &str) -> anyhow::Result<KProbeLink> {
    let p: &mut KProbe = ebpf.program_mut(prog).context(prog.to_string())?.try_into()?;
    if p.fd().is_err() {
        p.load().with_context(|| format!("loading {prog}"))?;
    }
    let id = p.attach(func, 0).with_context(|| format!("{what} on {func}"))?;
    Ok(p.take_link(id)?)
}

/// Which entry program captures what a function needs.
fn entry_program(opts: &Options, id: FuncId) -> &'static str {
    if (opts.counted)(id) {
        return "cu_count";
    }
    let spec = id.spec().expect("table entry");
    let plain = if spec.params.iter().any(|p| p.kind == Arg::Str) {
        "cu_enter_str"
    } else if spec.has_blob() {
        "cu_enter_blob"
    } else {
        "cu_enter"
    };
    crate::collect::replayable::probes::entry_program(id, opts.replay, plain)
}

/// The symbols of `syms` that the table covers, with their ids.
pub fn probe_targets(syms: &ExportedSymbols) -> Vec<(FuncId, String, u64)> {
    let mut v = Vec::new();
    for (i, spec) in FUNCS.iter().enumerate() {
        for (k, suffix) in VARIANTS.iter().enumerate() {
            let name = format!("{}{}", spec.name, suffix);
            if let Some(off) = syms.offset(&name) {
                v.push((FuncId::new(i, k), name, off));
            }
        }
    }
    v
}

fn attach_uprobes(
    ebpf: &mut Ebpf,
    opts: &Options,
    links: &mut Links,
    multi: Option<&uprobe_multi::MultiPrograms>,
) -> anyhow::Result<ProbeReport> {
    let (targets, skipped): (Vec<_>, Vec<_>) =
        probe_targets(opts.symbols).into_iter().partition(|(id, _, _)| (opts.select)(*id));
    if targets.is_empty() {
        bail!(
            "{} exports none of the CUDA driver functions tracer probes: is it really libcuda? pass --libcuda PATH",
            opts.libcuda.display()
        );
    }
    let mut report = ProbeReport {
        libcuda: opts.libcuda.to_path_buf(),
        exported_functions: opts.symbols.len(),
        exported_push_rbp: opts.symbols.push_rbp_count(),
        not_probed: skipped.into_iter().map(|(_, n, _)| n).collect(),
        ..Default::default()
    };
    for (_, name, _) in &targets {
        if !opts.symbols.prologue(name).is_some_and(crate::collect::libcuda::starts_with_push_rbp) {
            report.single_stepped.push(name.clone());
        }
        report.probed.push(name.clone());
    }
    let multi_err = match multi.map(|progs| attach_multi(progs, opts, &targets)) {
        Some(Ok(l)) => {
            links.multi = l;
            report.attach_mode = "uprobe_multi";
            if opts.programs == Programs::Tracer {
                let (counted, not_counted, link) = attach_unrecorded_counts(multi.expect("attached"), opts)?;
                links.multi.extend(link);
                report.counted_unrecorded = counted;
                report.not_counted = not_counted;
            }
            return Ok(report);
        }
        // Loading worked but the kernel refuses the link (no uprobe_multi
        // before Linux 6.6).
        Some(Err(e)) => Some(e),
        None => None,
    };
    if let Some(e) = multi_err {
        log::warn!("uprobe_multi unavailable ({e:#}); attaching one perf event per function (detaching will be slow)");
    }
    attach_perf(ebpf, opts, &targets, links)?;
    report.attach_mode = "perf";
    // One perf event per function costs a grace period each to detach: the undecoded
    // functions are named when a program resolves them, but not counted.
    report.not_counted = unrecorded_exports(opts.symbols)
        .into_iter()
        .map(|(n, _)| (n, "not counted: the kernel has no uprobe_multi"))
        .collect();
    Ok(report)
}

/// Exported driver functions (`cu*`) that no table entry covers, with their offsets, one
/// name per offset (aliases share one probe), sorted by name.
pub fn unrecorded_exports(syms: &ExportedSymbols) -> Vec<(String, u64)> {
    let table: std::collections::HashSet<u64> = probe_targets(syms).into_iter().map(|(_, _, off)| off).collect();
    let mut v: Vec<(String, u64)> = syms
        .symbols
        .iter()
        .filter(|(n, off)| n.starts_with("cu") && !n.starts_with("cudbg") && !table.contains(off))
        .map(|(n, off)| (n.clone(), *off))
        .collect();
    v.sort();
    let mut seen = std::collections::HashSet::new();
    v.retain(|(_, off)| seen.insert(*off));
    v
}

/// Counts every call of the exported driver functions the table does not cover with
/// `cu_count` (no record, no user-memory read): a program that calls one, through
/// cuGetProcAddress or otherwise, is told so in the footer. Functions whose first
/// instruction would be single-stepped (7-17 µs a call) are left out and named.
/// The counted functions, the ones not counted with the reason, and the probes' link.
type UnrecordedCounts = (Vec<String>, Vec<(String, &'static str)>, Option<MultiLink>);

fn attach_unrecorded_counts(progs: &uprobe_multi::MultiPrograms, opts: &Options) -> anyhow::Result<UnrecordedCounts> {
    let (mut counted, mut not_counted, mut offsets, mut cookies) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (name, off) in unrecorded_exports(opts.symbols) {
        if !opts.symbols.prologue(&name).is_some_and(crate::collect::libcuda::starts_with_push_rbp) {
            not_counted.push((name, "not counted: its first instruction would be single-stepped"));
            continue;
        }
        let Some(id) = crate::collect::counts::unrecorded_id(&name) else {
            not_counted.push((name, "not counted: no counting slot left"));
            continue;
        };
        offsets.push(off);
        cookies.push(tracer_common::cookie::Cookie::new(id.0).0);
        counted.push(name);
    }
    if offsets.is_empty() {
        return Ok((counted, not_counted, None));
    }
    let link = progs.attach("cu_count", opts.libcuda, &offsets, &cookies, false)?;
    Ok((counted, not_counted, Some(link)))
}

const ENTRY_PROGRAMS: [&str; 5] = ["cu_enter", "cu_enter_str", "cu_enter_blob", "cu_launch", "cu_count"];

/// The attach cookie of a probed table function.
fn cookie(opts: &Options, id: FuncId) -> u64 {
    let c = crate::collect::replayable::probes::cookie(id, opts.replay);
    // cu_count finds a launch's kernel handle through the launch bits.
    match crate::collect::replayable::probes::launch_args(id) {
        Some((f, kp, extra)) if (opts.counted)(id) => c.with_launch_args(f, kp, extra).0,
        _ => c.0,
    }
}

/// Loads the programs the probed functions get, for uprobe_multi links.
fn multi_programs(ebpf: &Ebpf, opts: &Options) -> anyhow::Result<uprobe_multi::MultiPrograms> {
    if let Programs::Bench { entry, ret } = opts.programs {
        let names: Vec<&str> = std::iter::once(entry).chain(ret).collect();
        return uprobe_multi::load(EBPF_OBJECT, ebpf, &names);
    }
    let mut names = vec!["cu_enter", "cu_enter_str", "cu_enter_blob", "cu_exit"];
    if opts.replay.replayable {
        names.push("cu_launch");
    }
    // --counts, and the exported functions outside the table (attach_unrecorded_counts).
    names.push("cu_count");
    // The trap's measurement at the recording's start (trap_cost).
    if opts.trap_programs {
        names.extend(["cu_empty", "cu_empty_ret"]);
    }
    uprobe_multi::load(EBPF_OBJECT, ebpf, &names)
}

fn attach_multi(
    progs: &uprobe_multi::MultiPrograms,
    opts: &Options,
    targets: &[(FuncId, String, u64)],
) -> anyhow::Result<Vec<MultiLink>> {
    if let Programs::Bench { entry, ret } = opts.programs {
        let (offsets, cookies): (Vec<u64>, Vec<u64>) =
            targets.iter().map(|(id, _, off)| (*off, cookie(opts, *id))).unzip();
        let mut links = vec![progs.attach(entry, opts.libcuda, &offsets, &cookies, false)?];
        if let Some(r) = ret {
            links.push(progs.attach(r, opts.libcuda, &offsets, &cookies, true)?);
        }
        return Ok(links);
    }
    let mut links = Vec::new();
    for prog in ENTRY_PROGRAMS {
        let (offsets, cookies): (Vec<u64>, Vec<u64>) = targets
            .iter()
            .filter(|(id, _, _)| entry_program(opts, *id) == prog)
            .map(|(id, _, off)| (*off, cookie(opts, *id)))
            .unzip();
        if !offsets.is_empty() {
            links.push(progs.attach(prog, opts.libcuda, &offsets, &cookies, false)?);
        }
    }
    let (offsets, cookies): (Vec<u64>, Vec<u64>) = targets
        .iter()
        .filter(|(id, _, _)| (opts.return_probe)(*id))
        .map(|(id, _, off)| (*off, cookie(opts, *id)))
        .unzip();
    if !offsets.is_empty() {
        links.push(progs.attach("cu_exit", opts.libcuda, &offsets, &cookies, true)?);
    }
    Ok(links)
}

fn attach_perf(
    ebpf: &mut Ebpf,
    opts: &Options,
    targets: &[(FuncId, String, u64)],
    links: &mut Links,
) -> anyhow::Result<()> {
    if opts.programs != Programs::Tracer {
        bail!("the benchmark's empty programs need uprobe_multi (Linux 6.6 or later)");
    }
    for prog in ["cu_enter", "cu_enter_str", "cu_enter_blob", "cu_exit", "cu_launch", "cu_count"] {
        if prog == "cu_launch" && !opts.replay.replayable {
            continue;
        }
        if prog == "cu_count" && !targets.iter().any(|(id, _, _)| (opts.counted)(*id)) {
            continue;
        }
        let p: &mut UProbe = ebpf.program_mut(prog).context(prog)?.try_into()?;
        if p.fd().is_err() {
            p.load().with_context(|| format!("loading {prog}"))?;
        }
    }
    for (id, name, off) in targets {
        let cookie = cookie(opts, *id);
        let progs: &[&str] =
            if (opts.return_probe)(*id) { &[entry_program(opts, *id), "cu_exit"] } else { &[entry_program(opts, *id)] };
        for &prog in progs {
            let p: &mut UProbe = ebpf.program_mut(prog).context(prog)?.try_into()?;
            let point =
                UProbeAttachPoint { location: UProbeAttachLocation::AbsoluteOffset(*off), cookie: Some(cookie) };
            let id = p
                .attach(point, opts.libcuda, UProbeScope::AllProcesses)
                .with_context(|| format!("attaching {prog} to {name} in {}", opts.libcuda.display()))?;
            links.uprobes.push(p.take_link(id)?);
        }
    }
    Ok(())
}

#[derive(Default)]
pub struct Links {
    pub tracepoints: Vec<TracePointLink>,
    pub raw_tracepoints: Vec<RawTracePointLink>,
    pub kprobes: Vec<KProbeLink>,
    pub uprobes: Vec<UProbeLink>,
    pub multi: Vec<MultiLink>,
    /// The on-CPU stack sampler's perf events (one per CPU).
    pub perf_events: Vec<aya::programs::perf_event::PerfEventLink>,
}

/// Detaches every probe. Each perf-event close waits for an RCU grace period
/// inside the kernel (~0.2 s on our VMs), so closing 350 probes one after the
/// other takes over a minute; closed from concurrent threads the waits
/// overlap and the whole detach takes about one grace period.
///
/// Except where uprobes are perf events (kernels before 6.6, no
/// uprobe_multi): there, links are closed one after the other. On Debian's
/// 6.1 kernel under qemu, concurrent closes after SIGINT with `-p` left two
/// tracer threads spinning in the kernel ("soft lockup … [tracer]", 2 of
/// ~10 runs of the kprobe VM's detach test; the cause in the kernel is not
/// identified). Serial closes there cost one grace period per link.
pub fn detach_all(links: Links) {
    if links.multi.is_empty() && !links.uprobes.is_empty() {
        let Links { tracepoints, raw_tracepoints, kprobes, uprobes, multi, perf_events } = links;
        drop(perf_events);
        drop(raw_tracepoints);
        drop(uprobes);
        drop(multi);
        drop(kprobes);
        drop(tracepoints);
        return;
    }
    let Links { tracepoints, raw_tracepoints, kprobes, uprobes, multi, perf_events } = links;
    // The samplers first (one per CPU, cheap to close).
    drop(perf_events);
    drop(raw_tracepoints);
    std::thread::scope(|s| {
        let spawn = |f: Box<dyn FnOnce() + Send>| {
            let b = std::thread::Builder::new().stack_size(64 * 1024);
            if let Err(e) = b.spawn_scoped(s, f) {
                // Out of threads: the closure was dropped, so the link was
                // closed right here instead.
                log::debug!("detach thread: {e}");
            }
        };
        for l in uprobes {
            spawn(Box::new(move || drop(l)));
        }
        for l in multi {
            spawn(Box::new(move || drop(l)));
        }
        for l in kprobes {
            spawn(Box::new(move || drop(l)));
        }
        for l in tracepoints {
            spawn(Box::new(move || drop(l)));
        }
    });
}

/// Per-CPU totals of the kernel-side counters.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct KernelCounters {
    /// Records attempted, per CPU (the next sequence number).
    pub attempted: Vec<u64>,
    pub ring_full: u64,
    pub save_failed: u64,
    /// `--counts`: launches whose kernel found no room in the kernel map.
    pub kernel_counts_full: u64,
    /// Run count and time per program (non-zero while BPF stats are on).
    pub programs: std::collections::BTreeMap<String, crate::collect::uprobe_multi::ProgStats>,
}

/// Run statistics of every attached program, by program name (uprobe_multi
/// links of one program summed).
pub fn program_stats(loaded: &Loaded) -> std::collections::BTreeMap<String, crate::collect::uprobe_multi::ProgStats> {
    let mut m: std::collections::BTreeMap<String, crate::collect::uprobe_multi::ProgStats> = Default::default();
    for (name, st) in loaded.links.multi.iter().filter_map(|l| l.stats()) {
        let e = m.entry(name).or_default();
        e.run_cnt += st.run_cnt;
        e.run_time_ns += st.run_time_ns;
        e.verified_insns = e.verified_insns.max(st.verified_insns);
    }
    if let Some(ebpf) = &loaded.ebpf {
        for (name, p) in ebpf.programs() {
            if let Ok(info) = p.info() {
                let e = m.entry(name.to_string()).or_default();
                e.run_cnt += info.run_count();
                e.run_time_ns += info.run_time().as_nanos() as u64;
                e.verified_insns = e.verified_insns.max(info.verified_instruction_count().unwrap_or(0));
            }
        }
    }
    m.retain(|_, s| s.run_cnt > 0);
    m
}

pub fn read_counters(c: &PerCpuArray<MapData, u64>) -> anyhow::Result<KernelCounters> {
    let seq = c.get(&counter::SEQ, 0)?;
    let full = c.get(&counter::RB_FULL, 0)?;
    let saves = c.get(&counter::SAVE_FAILED, 0)?;
    let kernels_full = c.get(&counter::KERNEL_COUNT_FULL, 0)?;
    Ok(KernelCounters {
        attempted: seq.iter().copied().collect(),
        ring_full: full.iter().sum(),
        save_failed: saves.iter().sum(),
        kernel_counts_full: kernels_full.iter().sum(),
        programs: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORK: &str = "name: sched_process_fork
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:__data_loc char[] parent_comm;\toffset:8;\tsize:4;\tsigned:0;
\tfield:pid_t parent_pid;\toffset:12;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] child_comm;\toffset:16;\tsize:4;\tsigned:0;
\tfield:pid_t child_pid;\toffset:20;\tsize:4;\tsigned:1;
";
    const OLD_FORK: &str = "\tfield:char parent_comm[16];\toffset:8;\tsize:16;\tsigned:1;
\tfield:pid_t parent_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:char child_comm[16];\toffset:28;\tsize:16;\tsigned:1;
\tfield:pid_t child_pid;\toffset:44;\tsize:4;\tsigned:1;";

    #[test]
    fn format_offsets() {
        assert_eq!(field_offset(FORK, "child_pid"), Some(20));
        assert_eq!(field_offset(FORK, "parent_comm"), Some(8));
        assert_eq!(field_offset(OLD_FORK, "child_pid"), Some(44));
        assert_eq!(field_offset(OLD_FORK, "child_comm"), Some(28));
        assert_eq!(field_offset(FORK, "group_dead"), None);
    }
}
