//! The collect layer: everything `tracer record` and `tracer agent` do,
//! behind plain options. The recording's sequence ([`record`]: the output,
//! the side channels, the command, the probes, the collection, the footer
//! and manifest) and the agent's ([`agent`]), both probing with the choices
//! of [`probe_options`] (the loader's options, the libcuda search, the
//! watch, the assembler). Finding and probing libcuda ([`libcuda`], [`loader`],
//! [`uprobe_multi`]) after the capability check ([`privileges`]), starting
//! the command ([`spawn`]), the collection loop ([`session`]) draining the
//! ring buffer ([`collector`]) through the decoders of `crate::decode` into
//! the trace file ([`writer`], [`output`], [`zstd_out`]) and its [`footer`], which names
//! every driver entry point a program resolved that is not recorded ([`entry_points`]);
//! what /proc tells about the traced processes ([`procfs`]); the lines that come from elsewhere
//! ([`side`]: NVML [`power`] samples and phase [`markers`];
//! [`gpu_timestamps`]: CUPTI through an injection library); replayable
//! recordings ([`replayable`]); kernel-side counts (`--counts`, [`counts`]); facts about the machine ([`sysinfo`]) and
//! other processes' memory ([`procmem`]); the machine's durations library
//! between runs ([`durations_library`]).
//!
//! Which processes are recorded ([`selection`]: the command's tree,
//! `--system`, `--cgroup`), the libcuda files they use, probed per inode
//! whatever their mount namespace ([`libcuda_watch`]), and their cgroups
//! ([`cgroups`]).
//!
//! Takes plain options, never the command line: `crate::cli::record` and
//! `crate::cli::agent` turn the arguments into them ([`record::options`],
//! [`agent::options`]) and print what comes back.
pub mod agent;
pub mod btf;
pub mod cgroups;
pub mod collector;
pub mod counts;
pub mod coverage;
pub mod durations_library;
pub mod entry_points;
pub mod footer;
pub mod gpu_durations;
pub mod gpu_timestamps;
pub mod host_speed_history;

pub mod kept_file;
pub mod launch_configs;
pub mod libcuda;
pub mod libcuda_watch;
pub mod loader;
pub mod markers;
pub mod output;
pub mod overlay;
pub mod own_sched;
pub mod power;
pub mod privileges;
pub mod probe_options;
pub mod procfs;
pub mod procmem;
pub mod ranks;
pub mod record;
pub mod replayable;
pub mod selection;
pub mod session;
pub mod side;
pub mod spawn;
pub mod stacks;
pub mod sysinfo;
pub mod trap_cost;
pub mod uprobe_multi;
pub mod window_demand;
pub mod writer;
pub mod zstd_out;
