//! [`Trace`]: a parsed trace, its records sorted by time (model/builder.rs
//! reads it), and what the analyses ask of it (span, pids, process names).
use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use super::graph_records::{ExecNode, GraphStats};
use super::records::{Call, Geom, GpuOp, GpuWindow, Ioctl, LossScan, Marker, PowerSample, ProcEvent, ProcOp, Strings};
use super::sched::Sched;
use super::stacks::Stacks;
use crate::analysis::durations_file::DurationsFile;

/// A parsed trace.
#[derive(Default, Debug)]
pub struct Trace {
    pub path: String,
    pub header: Option<Value>,
    pub footer: Option<Value>,
    pub calls: Vec<Call>,
    pub procs: Vec<ProcEvent>,
    pub ioctls: Vec<Ioctl>,
    pub markers: Vec<Marker>,
    pub power: Vec<PowerSample>,
    pub gpu: Vec<GpuOp>,
    /// `--gpu-timestamps sample`: the windows in which CUPTI activity was on,
    /// per process: every launch of the process inside one has its `gpu` line.
    pub gpu_windows: Vec<GpuWindow>,
    pub strings: Strings,
    pub geoms: Vec<Geom>,
    /// Streams created with CU_STREAM_NON_BLOCKING: (pid, handle).
    pub nonblocking_streams: HashSet<(u32, u64)>,
    pub loss: LossScan,
    /// Lines read, header and footer included.
    pub lines: u64,
    /// Lines of types this version does not know (read as calls when they have `ts`).
    pub unknown_types: BTreeMap<String, u64>,
    /// The last line was cut off (recording killed).
    pub truncated: bool,
    /// CUDA graphs built, launched and expanded (analysis/graphs.rs).
    pub graphs: GraphStats,
    /// `--replayable`: (ts, pid, tid) of an expanded graph launch whose exec
    /// has kernel nodes with parameter bytes -> its nodes ([`Trace::node_params`]).
    pub graph_node_params: HashMap<(u64, u32, u32), std::sync::Arc<Vec<ExecNode>>>,
    /// Scheduler events of the traced threads (`sched` lines).
    pub sched: Sched,
    /// The user stacks (`stack` lines) and which calls name them; `off_cpu`
    /// intervals keep theirs in [`Sched`].
    pub stacks: Stacks,
    /// The durations library's entries for the run's GPU (a `durations`
    /// line: its `origin` and durations; of two such lines, the last).
    pub library_durations: Option<(String, DurationsFile)>,
}

impl Trace {
    /// `--replayable`: the parameter bytes (hex) a kernel expanded from a
    /// graph launch ran with: its node's as of that launch (after updates).
    pub fn node_params(&self, c: &Call) -> Option<&str> {
        if !c.from_graph() {
            return None;
        }
        let ex = self.graph_node_params.get(&(c.ts, c.pid, c.tid))?;
        ex.iter().find(|n| n.node == c.obj)?.params.as_deref()
    }
    pub fn geom(&self, i: u32) -> Option<&Geom> {
        self.geoms.get(i as usize)
    }
    pub fn name(&self, i: u32) -> &str {
        self.strings.get(i)
    }
    /// First and last timestamp of any event (call ends included).
    pub fn span(&self) -> Option<(u64, u64)> {
        let mut lo = u64::MAX;
        let mut hi = 0u64;
        let mut upd = |a: u64, b: u64| {
            lo = lo.min(a);
            hi = hi.max(b);
        };
        for c in &self.calls {
            upd(c.ts, c.end());
        }
        for p in &self.procs {
            upd(p.ts, p.ts);
        }
        for i in &self.ioctls {
            upd(i.ts, i.ts + i.dur);
        }
        for m in &self.markers {
            upd(m.ts, m.ts);
        }
        for g in &self.gpu {
            upd(g.start, g.end);
        }
        for p in &self.power {
            upd(p.ts, p.ts);
        }
        (lo <= hi).then_some((lo, hi))
    }
    /// Pids of the traced processes, in order of first appearance in time.
    pub fn pids(&self) -> Vec<u32> {
        let mut first: HashMap<u32, u64> = HashMap::new();
        let mut add = |pid: u32, ts: u64| {
            if pid != 0 {
                let e = first.entry(pid).or_insert(ts);
                *e = (*e).min(ts);
            }
        };
        for c in &self.calls {
            add(c.pid, c.ts);
        }
        for p in &self.procs {
            add(p.pid, p.ts);
        }
        for g in &self.gpu {
            add(g.pid, g.start);
        }
        for m in &self.markers {
            add(m.pid, m.ts);
        }
        let mut v: Vec<(u64, u32)> = first.into_iter().map(|(p, t)| (t, p)).collect();
        v.sort();
        v.into_iter().map(|(_, p)| p).collect()
    }
    /// Program name of a pid (basename of its last exec, else the header's command).
    /// The program's name, and its rank when its exec line gave one
    /// (`python3 rank 1`).
    pub fn process_name(&self, pid: u32) -> String {
        let name = self.program_name(pid);
        match self.rank(pid) {
            Some(r) => format!("{name} rank {r}"),
            None => name,
        }
    }

    /// The rank of a distributed job's process, from its last exec line.
    pub fn rank(&self, pid: u32) -> Option<u64> {
        self.procs.iter().rev().filter(|p| p.pid == pid && p.op == ProcOp::Exec).find_map(|p| p.rank)
    }

    fn program_name(&self, pid: u32) -> String {
        let exec = self
            .procs
            .iter()
            .rev()
            .filter(|p| p.pid == pid && p.op == ProcOp::Exec)
            .find_map(|p| p.filename.as_deref());
        if let Some(f) = exec {
            return f.rsplit('/').next().unwrap_or(f).to_string();
        }
        if let Some(h) = &self.header
            && h["pid"].as_u64() == Some(pid as u64)
            && let Some(c) = h["command"][0].as_str()
        {
            return c.rsplit('/').next().unwrap_or(c).to_string();
        }
        format!("pid {pid}")
    }
    /// Model name of GPU `i` from the header.
    pub fn gpu_model(&self, i: usize) -> Option<String> {
        self.header.as_ref()?["gpus"][i]["model"].as_str().map(str::to_string)
    }
}
