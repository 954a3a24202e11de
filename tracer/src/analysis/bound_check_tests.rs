//! The bound is a bound: on every committed recording with measured GPU
//! activity (`gpu` lines from CUPTI), the `bound` timeline of the same trace
//! without its `gpu` lines never claims idle time the GPU was measured busy:
//! per GPU, per process, per process on each GPU and per phase, its certain
//! idle time is at most the measured idle time over the same window.
use std::path::Path;

use super::gaps::{self, GapOptions};
use super::model::{Kind, Trace};
use super::phases;
use super::stats::{complement, covered, overlap, union};
use super::timeline::{self, Timeline};
use crate::cli::load;

/// The committed recordings with `gpu` lines and driver calls (the replay
/// outputs under docs/replay/ have no calls: nothing to bound).
pub(crate) const MEASURED: &[&str] = &[
    "traces/simple_inference_gpu.jsonl.gz",
    "traces/transformer_inference_gpu.jsonl.gz",
    "traces/transformer_inference_full.jsonl.gz",
    "docs/graphs/g_capture.jsonl.zst",
    "docs/graphs/g_compiled_b1.jsonl.zst",
    "docs/graphs/g_compiled_b8.jsonl.zst",
    "docs/graphs/g_eager_b1.jsonl.zst",
    "docs/graphs/g_eager_b8.jsonl.zst",
];

pub(crate) fn load_committed(rel: &str) -> Trace {
    load::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)).unwrap()
}

/// The busy time of each scope the commands show: (name, busy intervals).
fn scopes(tl: &Timeline) -> Vec<(String, Vec<(u64, u64)>)> {
    let mut v = Vec::new();
    let busy = |f: &dyn Fn(&timeline::StreamTimeline) -> bool| {
        union(tl.streams.iter().filter(|s| f(s)).flat_map(|s| s.intervals.iter().map(|i| (i.start, i.end))).collect())
    };
    for d in tl.devices() {
        v.push((format!("gpu {d}"), busy(&|s| s.device == d)));
        for p in tl.pids() {
            v.push((format!("pid {p} on gpu {d}"), busy(&|s| s.device == d && s.key.pid == p)));
        }
    }
    for p in tl.pids() {
        v.push((format!("pid {p}"), busy(&|s| s.key.pid == p)));
    }
    v
}

/// Checks one recording three times: with all its proofs (synchronizations,
/// queries, blocking copies), with one in three, and with none (like a CUDA
/// 13 program whose synchronizations went through entry points tracer did
/// not record). Returns the number of scopes checked with all proofs.
fn check(rel: &str) -> usize {
    let mut t = load_committed(rel);
    assert!(!t.gpu.is_empty(), "{rel}: no gpu lines");
    let measured = timeline::measured(&t);
    let ph = phases::phases(&t);
    // the same trace as recorded without --gpu-timestamps
    t.gpu.clear();
    t.gpu_windows.clear();
    let all = std::mem::take(&mut t.calls);
    let mut checked = 0;
    for keep in [1, 3, 0] {
        let mut n = 0;
        t.calls = all
            .iter()
            .filter(|c| {
                if !(c.kind.is_blocking_sync() || c.kind == Kind::Query || c.kind == Kind::Copy) {
                    return true;
                }
                n += 1;
                keep != 0 && n % keep == 0
            })
            .copied()
            .collect();
        let c = check_one(&format!("{rel} (1 proof in {keep} kept)"), &t, &measured, &ph);
        if keep == 1 {
            checked = c;
        }
    }
    checked
}

fn check_one(rel: &str, t: &Trace, measured: &Timeline, ph: &phases::Phases) -> usize {
    let bound = timeline::bound(t);
    let m: std::collections::HashMap<String, Vec<(u64, u64)>> = scopes(measured).into_iter().collect();
    let mut checked = 0;
    for (name, b) in scopes(&bound) {
        let Some(mb) = m.get(&name) else { continue };
        let (Some(first), Some(last)) = (b.first().zip(mb.first()), b.last().zip(mb.last())) else { continue };
        // certain idle time: the bound's gaps; none of it may be measured busy
        let certain = complement(&b, first.0.0, last.0.1);
        let wrong = overlap(&certain, mb);
        assert_eq!(wrong, 0, "{rel} {name}: {wrong} ns of measured GPU work inside certain gaps");
        // over a window common to both, the certain idle time is at most the measured idle time
        let (lo, hi) = (first.0.0.min(first.1.0), last.0.1.max(last.1.1));
        let idle = |busy: &[(u64, u64)], a: u64, z: u64| (z - a) - covered(busy, a, z);
        assert!(idle(&b, lo, hi) <= idle(mb, lo, hi), "{rel} {name}: window");
        for p in ph.main() {
            let (a, z) = (p.start, p.end.max(p.start));
            assert!(
                idle(&b, a, z) <= idle(mb, a, z),
                "{rel} {name} phase {}: idle ≥ {} bound, {} measured",
                p.name,
                idle(&b, a, z),
                idle(mb, a, z)
            );
        }
        checked += 1;
    }
    // the figures `tracer gaps` prints: per scope and per phase
    let o = GapOptions::default();
    let rb = gaps::analyze(t, &bound, ph, &o);
    let rm = gaps::analyze(t, measured, ph, &o);
    for sb in &rb.scopes {
        let Some(sm) = rm.scopes.iter().find(|s| s.scope == sb.scope) else { continue };
        assert!(
            sb.overall.idle_ns <= sm.overall.idle_ns,
            "{rel} {}: gaps says idle ≥ {} (bound) but {} measured",
            sb.scope,
            sb.overall.idle_ns,
            sm.overall.idle_ns
        );
        for pb in &sb.phases {
            if let Some(pm) = sm.phases.iter().find(|p| p.phase == pb.phase) {
                assert!(
                    pb.stats.idle_ns <= pm.stats.idle_ns,
                    "{rel} {} phase {}: idle ≥ {} (bound) but {} measured",
                    sb.scope,
                    pb.phase,
                    pb.stats.idle_ns,
                    pm.stats.idle_ns
                );
            }
        }
    }
    checked
}

/// With all proofs, with some and with none (the reported case: launches
/// never proven complete leave the time after them unknown, not idle).
#[test]
fn the_bound_never_exceeds_the_measured_idle_time_on_the_committed_recordings() {
    for rel in MEASURED {
        let n = check(rel);
        assert!(n >= 2, "{rel}: {n} scopes checked");
    }
}

/// Random programs run on a model GPU that keeps CUDA's ordering rules (a
/// FIFO queue per stream; the legacy default stream waits for the blocking
/// streams' earlier work and they wait for it; events; synchronous copies):
/// the bound timeline of the calls never claims idle time the model GPU
/// was busy.
mod random {
    use proptest::prelude::*;

    use super::super::model::parse_str;
    use super::super::stats::{complement, overlap, union};
    use super::super::timeline;

    /// One step of the program: (what, stream 0..3, GPU time µs, CPU time before it µs, a coin).
    type Step = (u8, u8, u16, u16, bool);

    const STREAMS: [&str; 3] = ["0x0", "0x20", "0x30"]; // 0x30 is non-blocking

    struct Model {
        /// Each stream's end of work (ns).
        free: [u64; 3],
        /// Event 0xe0..0xe3: when its recorded work is done.
        events: [Option<u64>; 4],
        /// Busy intervals (the truth).
        busy: Vec<(u64, u64)>,
        lines: Vec<String>,
    }

    impl Model {
        fn line(&mut self, ts: u64, dur: u64, rest: &str) {
            self.lines.push(format!(
                r#"{{"ts":{ts},"pid":1,"tid":1,{rest},"duration_us":{}.{:03},"ret":0}}"#,
                dur / 1000,
                dur % 1000
            ));
        }
        /// Work queued on stream `s` at `at`, lasting `d`: when it runs.
        fn run(&mut self, s: usize, at: u64, d: u64) -> (u64, u64) {
            let mut start = at.max(self.free[s]);
            if s == 0 {
                start = start.max(self.free[1]);
            } else if s == 1 {
                start = start.max(self.free[0]);
            }
            let end = start + d;
            self.free[s] = end;
            if d > 0 {
                self.busy.push((start, end));
            }
            (start, end)
        }
    }

    fn program(steps: &[Step]) -> Model {
        let mut m = Model { free: [0; 3], events: [None; 4], busy: vec![], lines: vec![] };
        m.lines.push(r#"{"ts":1,"pid":1,"tid":1,"type":"stream","op":"stream_create","name":"cuStreamCreate","args":{"Flags":"0x1","phStream":"0x30"},"duration_us":0.5,"ret":0}"#.into());
        let mut now = 1000u64;
        for &(what, s, gpu_us, cpu_us, coin) in steps {
            now += u64::from(cpu_us) * 100;
            let s = usize::from(s % 3);
            let st = STREAMS[s];
            let d = u64::from(gpu_us) * 100 + 500;
            let call = 2_000; // a call's own CPU time
            match what % 10 {
                0..=3 => {
                    let name = if coin { "cuLaunchKernel_ptsz" } else { "cuLaunchKernel" };
                    m.line(now, call, &format!(r#""type":"kernel","op":"launch","name":"{name}","kernel":"k","grid":[1,1,1],"block":[32,1,1],"shared_mem":0,"stream":"{st}""#).replace("_ptsz", if coin { "_v2" } else { "" }));
                    m.run(s, now + 500, d);
                    now += call;
                }
                4 => {
                    let done = if s == 0 { m.free[0].max(m.free[1]).max(m.free[0]) } else { m.free[s] };
                    let ret = (now + call).max(done + 300);
                    let name = if coin { "cuStreamSynchronize_ptsz" } else { "cuStreamSynchronize" };
                    m.line(
                        now,
                        ret - now,
                        &format!(r#""type":"sync","op":"stream_synchronize","name":"{name}","stream":"{st}""#),
                    );
                    now = ret;
                }
                5 => {
                    let ret = (now + call).max(m.free.iter().copied().max().unwrap() + 300);
                    m.line(now, ret - now, r#""type":"sync","op":"ctx_synchronize","name":"cuCtxSynchronize_v2""#);
                    now = ret;
                }
                6 => {
                    // a query answers CUDA_SUCCESS when the stream's work was done at its entry
                    let done = m.free[s] <= now;
                    let (ret, err) = if done { (0, "") } else { (600, r#","error":"CUDA_ERROR_NOT_READY""#) };
                    m.lines.push(format!(r#"{{"ts":{now},"pid":1,"tid":1,"type":"sync","op":"stream_query","name":"cuStreamQuery","stream":"{st}","duration_us":1.0,"ret":{ret}{err}}}"#));
                    now += 1000;
                }
                7 => {
                    let e = usize::from(gpu_us % 4);
                    m.events[e] = Some(m.free[s].max(now));
                    m.line(now, 1000, &format!(r#""type":"event","op":"event_record","name":"cuEventRecord","event":"{:#x}","stream":"{st}""#, 0xe0 + e));
                    now += 1000;
                }
                8 => {
                    let e = usize::from(gpu_us % 4);
                    let ev = format!("{:#x}", 0xe0 + e);
                    match m.events[e] {
                        Some(done) if coin => {
                            let ret = (now + call).max(done + 300);
                            m.line(now, ret - now, &format!(r#""type":"sync","op":"event_synchronize","name":"cuEventSynchronize","event":"{ev}""#));
                            now = ret;
                        }
                        Some(done) => {
                            let ok = done <= now;
                            let (ret, err) = if ok { (0, "") } else { (600, r#","error":"CUDA_ERROR_NOT_READY""#) };
                            m.lines.push(format!(r#"{{"ts":{now},"pid":1,"tid":1,"type":"sync","op":"event_query","name":"cuEventQuery","event":"{ev}","duration_us":1.0,"ret":{ret}{err}}}"#));
                            now += 1000;
                        }
                        None => {}
                    }
                }
                _ => {
                    // a synchronous copy on the legacy stream: it waits for the earlier work
                    let prior = m.free[0].max(m.free[1]);
                    let begin = (now + 500).max(prior);
                    let (start, end) = m.run(0, begin, d);
                    let (name, dir, ret) = if coin {
                        ("cuMemcpyDtoH_v2", "d2h", end + 300)
                    } else {
                        // from pageable memory: returns once staged, maybe before the copy ran
                        ("cuMemcpyHtoD_v2", "h2d", start + 200)
                    };
                    let ret = ret.max(now + call);
                    m.line(
                        now,
                        ret - now,
                        &format!(r#""type":"memcpy","op":"copy","name":"{name}","size":4096,"direction":"{dir}""#),
                    );
                    now = ret;
                }
            }
        }
        m.lines
            .push(format!(r#"{{"ts":{},"pid":1,"tid":1,"type":"process","op":"exit","name":"process"}}"#, now + 1000));
        m
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

        #[test]
        fn certain_gaps_hold_no_work(steps in prop::collection::vec(any::<Step>(), 1..80)) {
            let m = program(&steps);
            let t = parse_str("random", &m.lines.join("\n")).unwrap();
            let tl = timeline::bound(&t);
            let b = union(tl.streams.iter().flat_map(|s| s.intervals.iter().map(|i| (i.start, i.end))).collect());
            let truth = union(m.busy.clone());
            if let (Some(f), Some(l)) = (b.first(), b.last()) {
                let certain = complement(&b, f.0, l.1);
                prop_assert_eq!(overlap(&certain, &truth), 0, "certain gaps {:?}\ntruth {:?}\n{}", certain, truth, m.lines.join("\n"));
                // no work before the bound timeline's window (after its end: the
                // trace ended, so did what it says)
                prop_assert!(truth.first().is_none_or(|x| x.0 >= f.0));
            } else {
                prop_assert!(truth.is_empty());
            }
        }
    }
}
