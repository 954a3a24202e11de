//! A discrete-event simulation of tenants on one time-sliced GPU
//! (docs/colocation.md, "The prediction").
//!
//! Each tenant is a host thread and one FIFO of GPU work. The host submits op
//! `i` its recorded gap after op `i − 1`'s start, or after its return when
//! the gap was recorded from the return (replay's pacing, [`super::pacing`]);
//! it cannot submit before the previous op returned. GPU work goes into the
//! tenant's FIFO and runs for its recorded duration, in submission order; a
//! synchronization returns once the work it waits for has run (a stream's:
//! up to the stream's last work; an event's: up to the work before its
//! record; a synchronous copy: up to itself).
//!
//! The GPU runs one tenant at a time. The running tenant keeps it while it
//! has work and its time slice `T` has not ended; when its work runs out, or
//! its slice ends while another tenant has work, the GPU switches to the
//! next tenant with work (round robin), idle for the switch cost `c`. A
//! slice that ends with no other tenant waiting starts a new one. A preempted
//! kernel resumes later with its remaining time. Work of zero duration needs
//! no GPU: it is done once the work before it is.
//!
//! Event-driven: one step per submission, completion, slice end or switch.

use std::collections::{HashMap, VecDeque};

use serde::Serialize;

use crate::exec::session::HostGap;

/// The simulated GPU's two constants.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Model {
    /// Context switch cost `c`, ns.
    pub switch_ns: u64,
    /// Time slice `T`, ns (at least 1).
    pub timeslice_ns: u64,
}

impl Model {
    /// The defaults of `--switch-us` and `--timeslice-us`, measured on an H100
    /// (driver 580, compute policy "Timeslice: Default") by experiments/colocation/timeslice_probe.py
    /// (docs/colocation.md, *The GPU's time slice*): a tiny kernel beside a
    /// context that never runs out of work waits 0.12–2.25 ms, whatever the
    /// length of the other's kernels (the GPU switches at the end of a slice,
    /// not between kernels): `T + c ≈ 2.25 ms`; two contexts of matrix products
    /// together do 89.7 % of the products alone: `c = T · (1/0.897 − 1) ≈ 230 µs`
    /// for `T = 2 ms`.
    pub const DEFAULT: Model = Model { switch_ns: 230_000, timeslice_ns: 2_000_000 };
}

impl Default for Model {
    fn default() -> Self {
        Model::DEFAULT
    }
}

/// What a host waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// All work submitted so far (cuCtxSynchronize).
    All,
    /// The last work submitted to a stream.
    Stream(usize),
    /// The work an event was recorded after.
    Event(usize),
}

/// What an op does, as far as the simulation is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// GPU work on a stream: its recorded GPU duration (None: none was
    /// recorded; it runs as 0); `sync`: the call returns once it has run.
    Work { stream: usize, ns: Option<u64>, sync: bool },
    /// An event recorded on a stream.
    Record { event: usize, stream: usize },
    /// A synchronization.
    Wait(Wait),
    /// Neither GPU work nor a wait.
    Host,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimOp {
    /// The recorded host time before its submission.
    pub gap: HostGap,
    pub act: Act,
}

/// One tenant's simulated pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TenantRun {
    /// From its first submission to the later of its last op's return and
    /// its last work's end (a pass waits for its work), ns.
    pub wall_ns: u64,
    /// Time its work ran on the GPU, ns.
    pub gpu_busy_ns: u64,
    /// Its first work's start to its last work's end, ns.
    pub gpu_span_ns: u64,
}

/// A simulated run of tenants together (or of one alone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    pub tenants: Vec<TenantRun>,
    /// Time any work ran, ns (no two tenants run at once).
    pub gpu_busy_ns: u64,
    /// First work's start to last work's end, ns.
    pub gpu_span_ns: u64,
    pub switches: u64,
}

/// One tenant's state.
struct Tenant<'a> {
    ops: &'a [SimOp],
    /// The next op to submit.
    next: usize,
    /// When it is submitted (None: the host waits, or has no ops left).
    due: Option<u64>,
    last_start: u64,
    /// Waiting until this many work items are done.
    waiting: Option<u64>,
    /// Remaining ns of the submitted work not done yet, in order.
    fifo: VecDeque<u64>,
    pushed: u64,
    done: u64,
    /// Per stream: how many items were pushed up to its last one.
    stream_last: HashMap<usize, u64>,
    event_at: HashMap<usize, u64>,
    host_end: u64,
    busy: u64,
    first_start: Option<u64>,
    last_end: u64,
}

impl<'a> Tenant<'a> {
    fn new(ops: &'a [SimOp]) -> Self {
        Tenant {
            ops,
            next: 0,
            due: (!ops.is_empty()).then_some(0),
            last_start: 0,
            waiting: None,
            fifo: VecDeque::new(),
            pushed: 0,
            done: 0,
            stream_last: HashMap::new(),
            event_at: HashMap::new(),
            host_end: 0,
            busy: 0,
            first_start: None,
            last_end: 0,
        }
    }

    fn ready(&self) -> bool {
        !self.fifo.is_empty()
    }

    /// The previous op returned at `now`: when the next one is due.
    fn returned(&mut self, now: u64) {
        self.host_end = now;
        self.due = self
            .ops
            .get(self.next)
            .map(|o| if o.gap.after_return { now + o.gap.ns } else { (self.last_start + o.gap.ns).max(now) });
    }

    /// Zero-duration work at the head is done once it is there; a waiting host returns when its work is done.
    fn settle(&mut self, now: u64) {
        while self.fifo.front() == Some(&0) {
            self.fifo.pop_front();
            self.done += 1;
        }
        if let Some(w) = self.waiting
            && self.done >= w
        {
            self.waiting = None;
            self.returned(now);
        }
    }

    /// Submits the next op at `now`.
    fn submit(&mut self, now: u64) {
        let op = self.ops[self.next];
        self.next += 1;
        self.last_start = now;
        let wait = match op.act {
            Act::Work { stream, ns, sync } => {
                self.fifo.push_back(ns.unwrap_or(0));
                self.pushed += 1;
                self.stream_last.insert(stream, self.pushed);
                sync.then_some(self.pushed)
            }
            Act::Record { event, stream } => {
                self.event_at.insert(event, self.stream_last.get(&stream).copied().unwrap_or(0));
                None
            }
            Act::Wait(Wait::All) => Some(self.pushed),
            Act::Wait(Wait::Stream(s)) => Some(self.stream_last.get(&s).copied().unwrap_or(0)),
            Act::Wait(Wait::Event(e)) => Some(self.event_at.get(&e).copied().unwrap_or(0)),
            Act::Host => None,
        };
        self.due = None;
        self.waiting = wait;
        match wait {
            Some(_) => self.settle(now),
            None => {
                self.settle(now);
                self.returned(now);
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gpu {
    Idle,
    /// Running a tenant whose slices are counted from `since`.
    Run {
        who: usize,
        since: u64,
    },
    Switch {
        to: usize,
        until: u64,
    },
}

/// Simulates the tenants (each an op list, all starting at time 0) on one GPU.
pub fn simulate(tenants: &[&[SimOp]], m: &Model) -> Outcome {
    let t_slice = m.timeslice_ns.max(1);
    let mut ts: Vec<Tenant> = tenants.iter().map(|o| Tenant::new(o)).collect();
    let n = ts.len();
    let mut gpu = Gpu::Idle;
    let mut last: Option<usize> = None;
    let mut now = 0u64;
    let mut switches = 0u64;
    let (mut busy, mut first, mut end) = (0u64, None::<u64>, 0u64);
    // The next tenant with work after `from` in round-robin order (`from` itself last).
    let next_ready = |ts: &[Tenant], from: usize| (1..=n).map(|k| (from + k) % n).find(|&j| ts[j].ready());
    loop {
        let host = ts.iter().enumerate().filter_map(|(i, t)| t.due.map(|d| (d, i))).min();
        // The next GPU event, and whether it is a slice end.
        let ev = match gpu {
            Gpu::Idle => None,
            Gpu::Switch { until, .. } => Some((until, false)),
            Gpu::Run { who, since } => {
                // (Empty: its last work ended as a host event was handled.)
                let done_at = now + ts[who].fifo.front().copied().unwrap_or(0);
                let others = (0..n).any(|j| j != who && ts[j].ready());
                let slice_end = since + t_slice * (now.saturating_sub(since)).div_ceil(t_slice).max(1);
                Some(if others && slice_end < done_at { (slice_end, true) } else { (done_at, false) })
            }
        };
        let to = match (host, ev) {
            (None, None) => break,
            (Some((h, _)), Some((g, _))) => h.min(g),
            (Some((h, _)), None) => h,
            (None, Some((g, _))) => g,
        };
        // The GPU's progress up to `to`.
        if let Gpu::Run { who, .. } = gpu
            && to > now
        {
            let dt = to - now;
            let t = &mut ts[who];
            t.fifo[0] -= dt;
            t.busy += dt;
            t.first_start.get_or_insert(now);
            t.last_end = to;
            busy += dt;
            first.get_or_insert(now);
            end = to;
        }
        now = to;
        if let Some((h, i)) = host
            && h == now
        {
            ts[i].submit(now);
        } else {
            match gpu {
                Gpu::Switch { to, .. } => {
                    gpu = Gpu::Run { who: to, since: now };
                    last = Some(to);
                }
                Gpu::Run { who, .. } => {
                    // Work that ran out is done.
                    ts[who].settle(now);
                    // A slice end with work left, or the work ran out: the next tenant with work.
                    if ev.is_some_and(|e| e.1) || !ts[who].ready() {
                        gpu = match next_ready(&ts, who).filter(|&j| j != who) {
                            Some(j) => {
                                switches += 1;
                                Gpu::Switch { to: j, until: now + m.switch_ns }
                            }
                            None if ts[who].ready() => gpu,
                            None => Gpu::Idle,
                        };
                    }
                }
                Gpu::Idle => unreachable!("an idle GPU has no event"),
            }
        }
        if gpu == Gpu::Idle
            && let Some(j) = next_ready(&ts, last.unwrap_or(n - 1))
        {
            gpu = if last.is_none_or(|l| l == j) {
                last = Some(j);
                Gpu::Run { who: j, since: now }
            } else {
                switches += 1;
                Gpu::Switch { to: j, until: now + m.switch_ns }
            };
        }
    }
    Outcome {
        tenants: ts
            .iter()
            .map(|t| TenantRun {
                wall_ns: t.host_end.max(t.last_end),
                gpu_busy_ns: t.busy,
                gpu_span_ns: t.first_start.map_or(0, |f| t.last_end - f),
            })
            .collect(),
        gpu_busy_ns: busy,
        gpu_span_ns: first.map_or(0, |f| end - f),
        switches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000;
    const M: Model = Model { switch_ns: 25 * US, timeslice_ns: 2_000 * US };

    fn op(gap_us: u64, after_return: bool, act: Act) -> SimOp {
        SimOp { gap: HostGap { ns: gap_us * US, after_return }, act }
    }
    /// A kernel of `us` µs on stream `s`, submitted `gap` µs after the previous op's start.
    fn kernel(gap: u64, s: usize, us: u64) -> SimOp {
        op(gap, false, Act::Work { stream: s, ns: Some(us * US), sync: false })
    }
    fn walls(o: &Outcome) -> Vec<u64> {
        o.tenants.iter().map(|t| t.wall_ns / US).collect()
    }

    #[test]
    fn two_gpu_bound_tenants_take_turns_of_one_slice() {
        // One 10 ms kernel each at 0: A runs 0–2 ms, B 2.025–4.025, A 4.05–6.05, … five slices
        // each, nine switches of 25 µs: A ends at 5·2 + 4·2 + 8·0.025 = 18.2 ms, B at
        // 20 + 9·0.025 = 20.225 ms.
        let a = [kernel(0, 0, 10_000)];
        let o = simulate(&[&a, &a], &M);
        assert_eq!(o.switches, 9);
        assert_eq!(walls(&o), vec![18_200, 20_225]);
        assert_eq!((o.gpu_busy_ns, o.gpu_span_ns), (20_000 * US, 20_225 * US));
        assert_eq!(
            o.tenants[0],
            TenantRun { wall_ns: 18_200 * US, gpu_busy_ns: 10_000 * US, gpu_span_ns: 18_200 * US }
        );
        // Alone: 10 ms, no switch though the kernel outlasts five slices.
        let alone = simulate(&[&a], &M);
        assert_eq!((walls(&alone), alone.switches), (vec![10_000], 0));
    }

    /// H: a 10 µs kernel at 0, a context sync 1000 µs later (its kernel long done), a 10 µs
    /// kernel 100 µs after that sync's return, a context sync 500 µs after that kernel's launch.
    fn host_bound() -> Vec<SimOp> {
        vec![
            kernel(0, 0, 10),
            op(1_000, false, Act::Wait(Wait::All)),
            op(100, true, Act::Work { stream: 0, ns: Some(10 * US), sync: false }),
            op(500, false, Act::Wait(Wait::All)),
        ]
    }

    #[test]
    fn a_host_bound_tenant_loses_only_what_its_syncs_wait() {
        let h = host_bound();
        // Alone: the recorded pacing, 0, 1000, 1100, 1600 µs; no wait at either sync.
        let alone = simulate(&[&h], &M);
        assert_eq!((walls(&alone), alone.switches, alone.tenants[0].gpu_busy_ns), (vec![1_600], 0, 20 * US));
        // Beside G (one 10 ms kernel at 0): H's first kernel runs 0–10 µs, the GPU switches to
        // G (10–35 µs). H's first sync (1000 µs) finds its kernel done: no loss. Its second
        // kernel (1100 µs) waits for G's slice to end (35 + 2000 = 2035 µs), a switch, runs
        // 2060–2070 µs: the sync submitted at 1600 µs returns at 2070 µs. Then back to G
        // (2070–2095 µs), which finishes its remaining 8000 µs at 10 095 µs.
        let g = [kernel(0, 0, 10_000)];
        let o = simulate(&[&h, &g], &M);
        assert_eq!(walls(&o), vec![2_070, 10_095]);
        assert_eq!(o.switches, 3);
        assert_eq!((o.gpu_busy_ns, o.gpu_span_ns), (10_020 * US, 10_095 * US));
        assert_eq!(o.tenants[0].gpu_span_ns, 2_070 * US);
        // Slowdowns 2070/1600 and 10095/10000.
    }

    #[test]
    fn alone_a_tenant_keeps_its_recorded_pacing_and_waits_for_its_own_work() {
        // Two streams, one FIFO: a 1000 µs kernel on 0, a 100 µs one on 1, an event on 1; the
        // stream sync of 1 returns at 1100 µs; a synchronous 50 µs copy 10 µs after that return
        // runs 1110–1160 µs and returns then; the event sync finds its work done: wall 1160 µs.
        let t = [
            kernel(0, 0, 1_000),
            kernel(0, 1, 100),
            op(0, false, Act::Record { event: 0, stream: 1 }),
            op(0, false, Act::Wait(Wait::Stream(1))),
            op(10, true, Act::Work { stream: 2, ns: Some(50 * US), sync: true }),
            op(0, true, Act::Wait(Wait::Event(0))),
            // Work without a recorded duration runs as 0 and needs no GPU.
            op(5, true, Act::Work { stream: 0, ns: None, sync: true }),
            op(7, false, Act::Host),
        ];
        let o = simulate(&[&t], &M);
        assert_eq!((walls(&o), o.switches, o.gpu_busy_ns), (vec![1_172], 0, 1_150 * US));
        // Host gaps alone, no work: the recorded pacing exactly.
        let h = [op(0, false, Act::Host), op(300, false, Act::Host), op(40, true, Act::Host)];
        assert_eq!(walls(&simulate(&[&h], &M)), vec![340]);
    }

    #[test]
    fn a_slice_end_preempts_a_kernel_which_resumes_later() {
        // A: a 3 ms kernel at 0. B: a 1 ms kernel at 0.5 ms. A is preempted at 2 ms with 1 ms
        // left, B runs 2.025–3.025 ms, A resumes 3.05–4.05 ms.
        let a = [kernel(0, 0, 3_000)];
        let b = [op(0, false, Act::Host), kernel(500, 0, 1_000)];
        let o = simulate(&[&a, &b], &M);
        assert_eq!((walls(&o), o.switches), (vec![4_050, 3_025], 2));
        assert_eq!(o.tenants[0].gpu_busy_ns, 3_000 * US);
        // Alone: 3 ms and 1.5 ms.
        assert_eq!(walls(&simulate(&[&b], &M)), vec![1_500]);
    }

    #[test]
    fn no_competitor_no_switch_and_a_switch_only_where_the_context_changes() {
        // Alone, work 3 ms, idle 2 ms, work 3 ms: no switch, 8 ms.
        let a = [kernel(0, 0, 3_000), kernel(5_000, 0, 3_000)];
        let alone = simulate(&[&a], &M);
        assert_eq!((walls(&alone), alone.switches), (vec![8_000], 0));
        // B's 1 ms kernel (at 3.1 ms) falls in A's idle time: no slice end preempts anyone, but
        // the GPU loads B's context (3.1–3.125 ms, B runs to 4.125 ms) and A's again when A's
        // second kernel comes (5–5.025 ms, A runs to 8.025 ms): two switches.
        let b = [op(0, false, Act::Host), kernel(3_100, 0, 1_000)];
        let o = simulate(&[&a, &b], &M);
        assert_eq!((walls(&o), o.switches), (vec![8_025, 4_125], 2));
        assert_eq!((o.gpu_busy_ns, o.gpu_span_ns), (7_000 * US, 8_025 * US));
    }
}
