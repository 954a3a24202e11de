//! What the agent counts for one process on one GPU, line by line, in
//! bounded memory: maps keyed by function names, CUresult names and copy
//! directions (finite sets), kernel families (fixed), kernel names only with
//! the opt-in top-N (capped), live allocations (capped, the excess counted).
use std::collections::HashMap;

use tracer_format::line::{CallOp, LineType};

use super::busy::{Busy, Measured};
use super::inferred::Work;
use crate::analysis::model::{Dir, Kind};

/// One call line, reduced to what the agent counts.
#[derive(Clone, Debug, Default)]
pub struct Obs<'a> {
    pub pid: u32,
    /// Device ordinal when the line carries one ("" otherwise).
    pub gpu: &'a str,
    pub ty: &'a str,
    pub op: &'a str,
    pub name: &'a str,
    pub ts: u64,
    /// Return probe seen (successful calls and errors with a return code).
    pub dur_ns: Option<u64>,
    pub size: Option<u64>,
    pub direction: Option<&'a str>,
    pub ptr: Option<u64>,
    pub error: Option<&'a str>,
    pub kernel: Option<&'a str>,
    pub stream: Option<u64>,
    /// The CUevent of an event call.
    pub event: Option<u64>,
    /// `gpu` lines (CUPTI): the end of the measured work.
    pub end_ts: Option<u64>,
    /// cuStreamCreate*: the stream created and whether with CU_STREAM_NON_BLOCKING.
    pub created_stream: Option<(u64, bool)>,
    /// A launch's geometry.
    pub geom: Option<crate::analysis::model::Geom>,
}

/// Caps that keep memory flat whatever the traced program does.
#[derive(Clone, Copy, Debug)]
pub struct Caps {
    /// Distinct kernel names counted per process and GPU for the top-N
    /// (0: kernel names are not kept at all).
    pub kernel_names: usize,
    /// Live allocations remembered per process and GPU (their sizes, for
    /// the bytes live); allocations beyond are counted as untracked.
    pub live_allocations: usize,
}

#[derive(Clone, Debug, Default)]
pub struct Counters {
    pub calls: HashMap<Box<str>, u64>,
    pub launches: HashMap<Box<str>, u64>,
    /// By [`tracer_common::family::FAMILIES`] index.
    pub kernels_by_family: [u64; tracer_common::family::FAMILIES.len()],
    pub kernels_by_name: HashMap<Box<str>, u64>,
    /// Launches whose kernel name did not fit under the cap.
    pub kernel_names_over_cap: u64,
    /// direction -> (copies, bytes)
    pub copies: HashMap<Box<str>, (u64, u64)>,
    pub allocations: u64,
    pub allocated_bytes: u64,
    pub frees: u64,
    pub live: HashMap<u64, u64>,
    pub live_bytes: u64,
    pub untracked_allocations: u64,
    pub syncs: u64,
    pub sync_ns: u64,
    pub errors: HashMap<Box<str>, u64>,
    pub busy: Busy,
    /// From `gpu` lines, when CUPTI is on: then the busy/idle figures are these.
    pub measured: Measured,
    pub measured_ops: u64,
    /// From the durations library (Options::durations), when it times most launches.
    pub inferred: super::inferred::Inferred,
}

/// What the busy/idle figures of a process on a GPU rest on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusyBasis {
    /// `gpu` lines: measured.
    Measured,
    /// Inferred from the durations library's kernel durations (inferred.rs).
    Calibrated,
    /// The bound timeline: busy possibly (an upper bound), idle certain (a lower bound).
    LowerBound,
}

impl BusyBasis {
    pub fn as_str(self) -> &'static str {
        match self {
            BusyBasis::Measured => "measured",
            BusyBasis::Calibrated => "calibrated",
            BusyBasis::LowerBound => "lower_bound",
        }
    }
}

/// `m[k] += by` without allocating a key when it is there already.
fn bump(m: &mut HashMap<Box<str>, u64>, k: &str, by: u64) {
    match m.get_mut(k) {
        Some(n) => *n += by,
        None => {
            m.insert(k.into(), by);
        }
    }
}

impl Counters {
    /// Busy ns, idle ns, idle-gap histogram counts, and what they rest on.
    pub fn busy_idle(&self) -> (u64, u64, [u64; 8], BusyBasis) {
        if self.measured_ops > 0 {
            let (b, i, g) = self.measured.totals();
            (b, i, g, BusyBasis::Measured)
        } else if self.inferred.covers() {
            let m = &self.inferred;
            (m.busy_ns, m.idle_ns, m.gap_counts, BusyBasis::Calibrated)
        } else {
            (self.busy.busy_total_ns(), self.busy.idle_ns, self.busy.gap_counts, BusyBasis::LowerBound)
        }
    }

    pub fn add(&mut self, o: &Obs, caps: Caps, durations: Option<&crate::analysis::durations::Durations>) {
        let ty = LineType::parse(o.ty);
        if ty == Some(LineType::Gpu) {
            // measured GPU work (CUPTI), not a call
            self.measured_ops += 1;
            self.measured.work(o.ts, o.end_ts.unwrap_or(o.ts + o.dur_ns.unwrap_or(0)));
            return;
        }
        bump(&mut self.calls, o.name, 1);
        if let Some(e) = o.error {
            bump(&mut self.errors, e, 1);
        }
        let ok = o.error.is_none();
        let exit = o.dur_ns.map(|d| o.ts + d);
        self.busy.seen(exit.unwrap_or(o.ts));
        let kind = Kind::classify(ty, o.op, o.name);
        let op = CallOp::parse(o.op);
        match (ty, op) {
            (Some(LineType::Kernel), Some(CallOp::Launch)) => {
                bump(&mut self.launches, o.name, 1);
                if ok {
                    let k = o.kernel.unwrap_or("");
                    self.kernels_by_family[tracer_common::family::index(tracer_common::family::family(k))] += 1;
                    self.kernel_name(o.kernel, caps);
                    self.busy.work(o.ts, o.stream.unwrap_or(0));
                    if let (Some(d), Some(name)) = (durations, o.kernel) {
                        let w = Work::Kernel(name, o.geom.as_ref());
                        self.inferred.work(d, exit.unwrap_or(o.ts), o.stream.unwrap_or(0), w);
                    }
                }
            }
            (Some(LineType::Memcpy), _) if ok => {
                let dir = o.direction.unwrap_or("unknown");
                match self.copies.get_mut(dir) {
                    Some(c) => *c = (c.0 + 1, c.1 + o.size.unwrap_or(0)),
                    None => {
                        self.copies.insert(dir.into(), (1, o.size.unwrap_or(0)));
                    }
                }
                self.busy.work(o.ts, o.stream.unwrap_or(0));
                if let Some(d) = durations {
                    let w = Work::Copy(Some(Dir::parse(dir)), o.size.unwrap_or(0));
                    self.inferred.work(d, exit.unwrap_or(o.ts), o.stream.unwrap_or(0), w);
                }
                // A device-to-host copy (not Async) returns when it and the
                // legacy stream's earlier work are done (a host-to-device one
                // may return before its copy ran: it proves nothing here).
                if kind == Kind::Copy
                    && Dir::parse(o.direction.unwrap_or("")) == Dir::D2H
                    && let Some(e) = exit
                {
                    self.busy.sync(e, Some(0));
                    self.inferred.sync(e, Some(0));
                }
            }
            (Some(LineType::Memset), _) if ok => {
                self.busy.work(o.ts, o.stream.unwrap_or(0));
                if let Some(d) = durations {
                    let w = Work::Copy(None, o.size.unwrap_or(0));
                    self.inferred.work(d, exit.unwrap_or(o.ts), o.stream.unwrap_or(0), w);
                }
            }
            (Some(LineType::Memory), Some(CallOp::Alloc)) if ok => self.alloc(o, caps),
            (Some(LineType::Memory), Some(CallOp::Free)) if ok => self.free(o.ptr),
            (_, Some(CallOp::StreamCreate | CallOp::StreamCreateWithPriority)) if ok => {
                if let Some((s, nonblocking)) = o.created_stream {
                    self.busy.stream_created(s, nonblocking);
                }
            }
            (Some(LineType::Event), Some(CallOp::EventRecord | CallOp::EventRecordWithFlags)) if ok => {
                if let Some(ev) = o.event {
                    self.busy.event_record(ev, o.stream.unwrap_or(0));
                }
            }
            (Some(LineType::Sync), op) if ok => {
                // A query answering CUDA_SUCCESS: that stream (or the event's work) is done.
                let e = exit;
                match (op, e) {
                    (Some(CallOp::StreamSynchronize | CallOp::StreamQuery), Some(e)) => {
                        self.busy.sync(e, Some(o.stream.unwrap_or(0)));
                        self.inferred.sync(e, Some(o.stream.unwrap_or(0)));
                    }
                    (Some(CallOp::CtxSynchronize), Some(e)) => {
                        self.busy.sync(e, None);
                        self.inferred.sync(e, None);
                    }
                    (Some(CallOp::EventSynchronize | CallOp::EventQuery), Some(e)) => {
                        if let Some(ev) = o.event {
                            self.busy.event_done(e, ev);
                        }
                    }
                    _ => {}
                }
                // the synchronization time of analysis/figures.rs: blocking waits, not polling
                if kind.is_blocking_sync() {
                    self.syncs += 1;
                    self.sync_ns += o.dur_ns.unwrap_or(0);
                }
            }
            _ => {}
        }
    }

    fn kernel_name(&mut self, kernel: Option<&str>, caps: Caps) {
        if caps.kernel_names == 0 {
            return;
        }
        let k = kernel.unwrap_or("unknown");
        let full = self.kernels_by_name.len() >= caps.kernel_names;
        match self.kernels_by_name.get_mut(k) {
            Some(n) => *n += 1,
            None if !full => {
                self.kernels_by_name.insert(k.into(), 1);
            }
            None => self.kernel_names_over_cap += 1,
        }
    }

    fn alloc(&mut self, o: &Obs, caps: Caps) {
        let size = o.size.unwrap_or(0);
        self.allocations += 1;
        self.allocated_bytes += size;
        match o.ptr {
            Some(p) if p != 0 && self.live.len() < caps.live_allocations => {
                if let Some(old) = self.live.insert(p, size) {
                    // The same address again without a free we saw.
                    self.live_bytes -= old;
                }
                self.live_bytes += size;
            }
            _ => self.untracked_allocations += 1,
        }
    }

    fn free(&mut self, ptr: Option<u64>) {
        self.frees += 1;
        if let Some(size) = ptr.and_then(|p| self.live.remove(&p)) {
            self.live_bytes -= size;
        }
    }

    /// The `n` kernels launched most often (name, launches), most first.
    pub fn top_kernels(&self, n: usize) -> Vec<(&str, u64)> {
        let mut v: Vec<(&str, u64)> = self.kernels_by_name.iter().map(|(k, &c)| (&**k, c)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v.truncate(n);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPS: Caps = Caps { kernel_names: 2, live_allocations: 2 };

    fn obs<'a>(ty: &'a str, op: &'a str, name: &'a str) -> Obs<'a> {
        Obs { pid: 1, ty, op, name, ts: 1000, dur_ns: Some(10), ..Default::default() }
    }

    #[test]
    fn launches_by_api_family_and_capped_names() {
        let mut c = Counters::default();
        for k in ["sm90_xmma_gemm", "flash_fwd", "sm90_xmma_gemm", "elementwise_kernel"] {
            c.add(&Obs { kernel: Some(k), ..obs("kernel", "launch", "cuLaunchKernel") }, CAPS, None);
        }
        c.add(&Obs { kernel: Some("x"), ..obs("kernel", "launch", "cuLaunchKernelEx") }, CAPS, None);
        assert_eq!(c.launches["cuLaunchKernel"], 4);
        assert_eq!(c.launches["cuLaunchKernelEx"], 1);
        assert_eq!(c.calls["cuLaunchKernel"], 4);
        // gemm, attention, elementwise, reduction, copy, set, other
        assert_eq!(c.kernels_by_family, [2, 1, 1, 0, 0, 0, 0, 1]);
        assert_eq!(c.top_kernels(5), vec![("sm90_xmma_gemm", 2), ("flash_fwd", 1)]);
        assert_eq!(c.kernel_names_over_cap, 2);
    }

    #[test]
    fn live_bytes_follow_allocations_and_frees_within_the_cap() {
        let mut c = Counters::default();
        for (p, s) in [(0x10, 100), (0x20, 50), (0x30, 7)] {
            c.add(&Obs { ptr: Some(p), size: Some(s), ..obs("memory", "alloc", "cuMemAlloc_v2") }, CAPS, None);
        }
        assert_eq!((c.allocations, c.allocated_bytes, c.live_bytes, c.untracked_allocations), (3, 157, 150, 1));
        c.add(&Obs { ptr: Some(0x10), ..obs("memory", "free", "cuMemFree_v2") }, CAPS, None);
        c.add(&Obs { ptr: Some(0x99), ..obs("memory", "free", "cuMemFree_v2") }, CAPS, None);
        assert_eq!((c.frees, c.live_bytes, c.live.len()), (2, 50, 1));
    }

    #[test]
    fn copies_errors_and_synchronization() {
        let mut c = Counters::default();
        let cp = |d, s| Obs { direction: Some(d), size: Some(s), ..obs("memcpy", "copy", "cuMemcpyHtoDAsync_v2") };
        c.add(&cp("h2d", 4096), CAPS, None);
        c.add(&cp("h2d", 4), CAPS, None);
        c.add(&cp("d2h", 8), CAPS, None);
        c.add(&Obs { error: Some("CUDA_ERROR_INVALID_VALUE"), ..cp("d2h", 8) }, CAPS, None);
        assert_eq!(c.copies["h2d"], (2, 4100));
        assert_eq!(c.copies["d2h"], (1, 8));
        assert_eq!(c.errors["CUDA_ERROR_INVALID_VALUE"], 1);
        c.add(&Obs { dur_ns: Some(5_000), ..obs("sync", "ctx_synchronize", "cuCtxSynchronize") }, CAPS, None);
        // A query that failed (not ready) is neither a synchronization nor a bound.
        c.add(&Obs { error: Some("CUDA_ERROR_NOT_READY"), ..obs("sync", "stream_query", "cuStreamQuery") }, CAPS, None);
        assert_eq!((c.syncs, c.sync_ns), (1, 5_000));
        assert_eq!(c.busy.busy_ns, 5_000, "copies from ts 1000 to the sync's return at 6000");
        assert_eq!(c.calls.values().sum::<u64>(), 6);
    }
}
