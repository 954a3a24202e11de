//! The processes of a multi-process recording (torchrun, mpirun: one per
//! rank) and the selection of one of them (`replay --pid PID` / `--rank N`):
//! the trace cut down to that process's calls, GPU activity and markers,
//! before planning, so that the plan sees only its handles, allocations,
//! streams and events. The rank comes from the process's exec line
//! (`rank`, `local_rank`, `world_size`: docs/trace-format.md).
//!
//! A selected rank of a job of several ranks cannot run its collectives
//! (NCCL kernels read and write the peers' buffers): the plan skips them
//! (plan `skip_collectives`), and their measured GPU time is taken out of
//! the recorded time here, counted in [`Selected`].

use anyhow::Result;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

use super::Trace;

/// The rank fields of one exec line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecRank {
    pub line: usize,
    pub pid: u32,
    pub rank: Option<u64>,
    pub local_rank: Option<u64>,
    pub world_size: Option<u64>,
}

impl ExecRank {
    /// The rank fields of an exec line (None: it has none). Their types are tracer's reading rule's
    /// (tracer_format::read::Checker): a rank that is not a non-negative integer is an error naming
    /// the file, line and field before this sees the line.
    pub fn of_line(obj: &Map<String, Value>, line: usize, pid: u32) -> Option<ExecRank> {
        let field = |k: &str| obj.get(k).and_then(Value::as_u64);
        let (rank, local_rank, world_size) = (field("rank"), field("local_rank"), field("world_size"));
        if rank.is_none() && local_rank.is_none() && world_size.is_none() {
            return None;
        }
        Some(ExecRank { line, pid, rank, local_rank, world_size })
    }
}

/// A process that made CUDA calls, with its rank when its exec line has one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Process {
    pub pid: u32,
    pub calls: usize,
    pub rank: Option<u64>,
    pub local_rank: Option<u64>,
    pub world_size: Option<u64>,
}

impl Process {
    /// `pid 101 rank 0` (or `pid 101` without rank).
    pub fn label(&self) -> String {
        match self.rank {
            Some(r) => format!("pid {} rank {r}", self.pid),
            None => format!("pid {}", self.pid),
        }
    }
}

/// The processes with call lines, by pid; each with the rank of its last
/// exec line that has rank fields.
pub fn processes(trace: &Trace) -> Vec<Process> {
    let mut calls: BTreeMap<u32, usize> = BTreeMap::new();
    for c in &trace.calls {
        *calls.entry(c.pid).or_default() += 1;
    }
    calls
        .into_iter()
        .map(|(pid, n)| {
            let r = trace.ranks.iter().filter(|r| r.pid == pid).max_by_key(|r| r.line);
            Process {
                pid,
                calls: n,
                rank: r.and_then(|r| r.rank),
                local_rank: r.and_then(|r| r.local_rank),
                world_size: r.and_then(|r| r.world_size),
            }
        })
        .collect()
}

/// The line `replay` prints for a recording of several processes replayed
/// without selection; None for one process.
pub fn several_processes_note(procs: &[Process]) -> Option<String> {
    if procs.len() < 2 {
        return None;
    }
    let list: Vec<String> = procs.iter().map(Process::label).collect();
    Some(format!(
        "note: the recording has {} processes ({}): replay runs all their work in one process on one GPU (collectives between them cannot run there); --pid PID or --rank N replays one alone",
        procs.len(),
        list.join(", ")
    ))
}

/// Which process to replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    Pid(u32),
    Rank(u64),
}

/// The process selected and what its selection left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Selected {
    pub pid: u32,
    pub rank: Option<u64>,
    pub world_size: Option<u64>,
    /// Processes with call lines in the recording.
    pub processes: usize,
    /// Whether the process's collectives are skipped: it is one of several ranks
    /// (several processes, or `world_size` > 1).
    pub skip_collectives: bool,
    /// Collective kernels measured (`gpu` lines of the process) and their summed GPU time;
    /// 0 without `--gpu-timestamps`: the coverage counts their launches.
    pub collective_gpu_lines: usize,
    pub collective_gpu_ns: u64,
    /// Call lines of the other processes left out.
    pub other_calls: usize,
    /// The GPU (NVML/CUDA index) the process's launches ran on when recorded (their `device`,
    /// the most frequent one), when known: the selected trace's power samples are that GPU's,
    /// as GPU 0 (replay compares the recorded energy of GPU 0 with the GPU it replays on).
    pub recorded_gpu: Option<u32>,
}

/// The most frequent `device` of the call lines (ties: the lowest index).
fn recorded_gpu(calls: &[super::Call]) -> Option<u32> {
    let mut n: BTreeMap<u32, usize> = BTreeMap::new();
    for d in calls.iter().filter_map(|c| c.u64_field("device")) {
        *n.entry(d as u32).or_default() += 1;
    }
    n.into_iter().max_by_key(|(d, k)| (*k, std::cmp::Reverse(*d))).map(|(d, _)| d)
}

/// Whether `kernel` is a collective (NCCL's kernels: family `nccl`).
pub fn is_collective(kernel: &str) -> bool {
    tracer_common::family::family(kernel) == "nccl"
}

/// The trace of the selected process alone: its call lines, gpu lines (less
/// its collectives', when those are skipped), markers, exec lines; the power
/// samples of the GPU it ran on, as GPU 0 (all when its GPU is not known);
/// header/footer kept. An unknown pid
/// or rank is a [`crate::Misuse`] listing the processes present.
pub fn select(trace: &Trace, sel: Selection) -> Result<(Trace, Selected)> {
    let procs = processes(trace);
    let present = || {
        let l: Vec<String> = procs.iter().map(Process::label).collect();
        if l.is_empty() { "none: it has no call lines".to_owned() } else { l.join(", ") }
    };
    let p = match sel {
        Selection::Pid(pid) => match procs.iter().find(|p| p.pid == pid) {
            Some(p) => p.clone(),
            None => {
                return Err(crate::Misuse(format!(
                    "--pid {pid}: no process of the recording has pid {pid} with CUDA calls (processes: {})",
                    present()
                ))
                .into());
            }
        },
        Selection::Rank(rank) => {
            let hits: Vec<&Process> = procs.iter().filter(|p| p.rank == Some(rank)).collect();
            match hits.as_slice() {
                [p] => (*p).clone(),
                [] => {
                    return Err(crate::Misuse(format!(
                        "--rank {rank}: no process of the recording has rank {rank} (processes: {}; ranks come from the exec lines' \"rank\" field)",
                        present()
                    ))
                    .into());
                }
                several => {
                    let l: Vec<String> = several.iter().map(|p| p.pid.to_string()).collect();
                    return Err(crate::Misuse(format!(
                        "--rank {rank}: processes {} all have rank {rank}; choose one with --pid",
                        l.join(", ")
                    ))
                    .into());
                }
            }
        }
    };
    let skip_collectives = procs.len() > 1 || p.world_size.is_some_and(|w| w > 1);
    let mut t = Trace {
        header: trace.header.clone(),
        footer: trace.footer.clone(),
        calls: trace.calls.iter().filter(|c| c.pid == p.pid).cloned().collect(),
        gpu: Vec::new(),
        markers: trace.markers.iter().filter(|m| m.pid == p.pid).cloned().collect(),
        power: trace.power.clone(),
        stops: trace.stops.clone(),
        // per thread: another process's threads never pace this one's gaps
        probed: trace.probed.clone(),
        off_cpu: trace.off_cpu.clone(),
        samples: trace.samples.clone(),
        has_sched: trace.has_sched,
        execs: trace.execs.iter().filter(|e| e.2 == p.pid).copied().collect(),
        ranks: trace.ranks.iter().filter(|r| r.pid == p.pid).cloned().collect(),
        lines: trace.lines,
        warnings: trace.warnings.clone(),
    };
    let mut s = Selected {
        pid: p.pid,
        rank: p.rank,
        world_size: p.world_size,
        processes: procs.len(),
        skip_collectives,
        collective_gpu_lines: 0,
        collective_gpu_ns: 0,
        other_calls: trace.calls.len() - t.calls.len(),
        recorded_gpu: recorded_gpu(&t.calls),
    };
    if let Some(g) = s.recorded_gpu {
        t.power =
            trace.power.iter().filter(|p| p.gpu == g).map(|p| super::PowerSample { gpu: 0, ..p.clone() }).collect();
    }
    for g in trace.gpu.iter().filter(|g| g.pid == p.pid) {
        if skip_collectives
            && g.activity() == Some(tracer_format::line::GpuActivity::Kernel)
            && g.name.as_deref().is_some_and(is_collective)
        {
            s.collective_gpu_lines += 1;
            s.collective_gpu_ns += g.end_ts - g.ts;
        } else {
            t.gpu.push(g.clone());
        }
    }
    Ok((t, s))
}

impl Selected {
    /// One line for the plan summary and the report.
    pub fn text(&self, collectives_skipped: usize) -> String {
        let who = match (self.rank, self.world_size) {
            (Some(r), Some(w)) => format!("pid {} (rank {r} of {w})", self.pid),
            (Some(r), None) => format!("pid {} (rank {r})", self.pid),
            _ => format!("pid {}", self.pid),
        };
        let gpu = self.recorded_gpu.map(|g| format!(", recorded on GPU {g}")).unwrap_or_default();
        let mut s = format!(
            "selected: {who}{gpu}, 1 of {} processes ({} call lines of the others left out)",
            self.processes, self.other_calls
        );
        if self.skip_collectives {
            let time = if self.collective_gpu_lines > 0 {
                format!(
                    "{} measured on the GPU took {:.1} µs when recorded",
                    self.collective_gpu_lines,
                    self.collective_gpu_ns as f64 / 1e3
                )
            } else {
                "their recorded GPU time was not measured (no gpu lines: record with --gpu-timestamps)".to_owned()
            };
            s.push_str(&format!("; collectives skipped: {collectives_skipped} launches ({time})"));
        }
        s
    }
}
