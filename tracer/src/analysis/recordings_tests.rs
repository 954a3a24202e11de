//! Stable figures of the analyses on the committed H100 recordings in
//! traces/ (computed once, checked for plausibility, then pinned).
use std::path::Path;
use std::sync::OnceLock;

use super::basis::IdleBasis;
use super::gaps::{self, GapOptions};
use super::model::{Kind, Trace};
use super::timeline::{self, Source};
use super::{phases, report};
use crate::cli::load;
use crate::export::perfetto;

fn trace(name: &str) -> &'static Trace {
    static SIMPLE: OnceLock<Trace> = OnceLock::new();
    static TRANSFORMER: OnceLock<Trace> = OnceLock::new();
    static TRANSFORMER_IOCTLS: OnceLock<Trace> = OnceLock::new();
    let cell = match name {
        "simple_inference" => &SIMPLE,
        "transformer_inference" => &TRANSFORMER,
        _ => &TRANSFORMER_IOCTLS,
    };
    cell.get_or_init(|| {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../traces/{name}.jsonl.gz"));
        load::load(&p).unwrap()
    })
}

fn durations_of<'a>(p: &[&'a phases::Phase]) -> Vec<(&'a str, u64)> {
    p.iter().map(|p| (p.name.as_str(), p.end - p.start)).collect()
}

#[test]
fn simple_inference_figures() {
    let t = trace("simple_inference");
    assert_eq!((t.calls.len(), t.procs.len(), t.ioctls.len()), (1941, 36, 0));
    assert_eq!(t.calls.iter().filter(|c| c.kind == Kind::Launch).count(), 88);
    let ph = phases::phases(t);
    assert_eq!(ph.main_pid, Some(409));
    let v: Vec<&phases::Phase> = ph.main().iter().collect();
    assert_eq!(
        durations_of(&v),
        [("startup", 6_224_654_790), ("loading", 206_806_797), ("warmup", 4_746_057), ("steady", 845_319_607)]
    );
    let tl = timeline::bound(t);
    assert_eq!((tl.streams.len(), tl.interval_count(), tl.diag.ops, tl.diag.unbounded_ops), (1, 10, 142, 0));
    let r = gaps::analyze(t, &tl, &ph, &GapOptions::default());
    let g = &r.scopes[0].overall;
    assert_eq!(
        (g.window_ns, g.count, g.idle_ns, g.long_count, g.long_ns),
        (236_312_863, 9, 188_544_468, 7, 188_433_754)
    );
    assert_eq!(g.max_ns, 181_108_332);
}

#[test]
fn transformer_inference_figures() {
    let t = trace("transformer_inference");
    let ph = phases::phases(t);
    let v: Vec<&phases::Phase> = ph.main().iter().collect();
    assert_eq!(
        durations_of(&v),
        [("startup", 17_840_591_795), ("loading", 58_188_022), ("warmup", 3_894_857_382), ("steady", 1_931_778_334)]
    );
    // bound timeline: the 328 stream synchronizations close 328 stretches on the
    // legacy stream; 2 memsets on a non-blocking stream (cuBLAS's, in warm-up) are
    // never proven complete: that stream is possibly busy from them to the end
    // of the trace, so no idle time after them is certain
    let tl = timeline::bound(t);
    assert_eq!((tl.streams.len(), tl.interval_count(), tl.diag.ops, tl.diag.unbounded_ops), (2, 329, 23_872, 2));
    let r = gaps::analyze(t, &tl, &ph, &GapOptions::default());
    assert_eq!(r.scopes.len(), 2);
    let s = &r.scopes[0];
    let g = &s.overall;
    assert_eq!((g.window_ns, g.count, g.idle_ns), (5_884_573_406, 154, 47_352_689));
    // no durations: the busy time and idle share are unknown, 0.8 % is only a lower bound
    assert_eq!((r.idle_basis, g.busy_ns, g.idle_share), (IdleBasis::LowerBound, None, None));
    assert_eq!(g.idle_share_lower_bound, Some(47_352_689.0 / 5_884_573_406.0));
    assert_eq!((g.long_count, g.long_ns, g.p50_ns, g.max_ns), (15, 41_963_088, 37_202, 12_542_755));
    let per: Vec<(&str, u64, u64)> =
        s.phases.iter().map(|p| (p.phase.as_str(), p.stats.count, p.stats.idle_ns)).collect();
    // per phase, the phase's whole window (as `tracer report`): start-up is idle
    assert_eq!(
        per,
        [("startup", 1, 17_840_591_795), ("loading", 149, 23_802_369), ("warmup", 6, 23_800_652), ("steady", 0, 0)]
    );
    // long gaps are mostly lazy module loading (warm-up) and Python between calls
    assert!((s.long_gap_causes["module_loading"] - 0.7566).abs() < 1e-4, "{:?}", s.long_gap_causes);
    assert!((s.long_gap_causes["cpu_between_calls"] - 0.1925).abs() < 1e-4);
    let rep = report::build(t, &ph, &tl);
    assert_eq!((rep.total.launches, rep.total.distinct_kernels, rep.total.sync_calls), (22_758, 50, 328));
    assert_eq!((rep.total.sync_ns, rep.total.copy_bytes, rep.total.alloc_bytes), (2_050_559, 289_087_976, 373_450_505));
    let steady = rep.phases.iter().find(|p| p.name == "steady").unwrap();
    assert_eq!(steady.counts.launches, 17_340); // as `tracer ioctls` counts for this phase
    assert_eq!(rep.copies_by_direction["d2h"], (168, 168));
    assert!(rep.lost_scan.is_empty());
    assert_eq!(rep.lost_footer, Some(0));
}

#[test]
fn transformer_inferred_with_uniform_durations() {
    // every kernel 5 µs: the queue never backs up for long in this launch-bound
    // run, so the GPU is idle most of the steady state
    let t = trace("transformer_inference");
    let mut names: Vec<&str> = t.calls.iter().filter(|c| c.kind == Kind::Launch).map(|c| t.name(c.kernel)).collect();
    names.sort_unstable();
    names.dedup();
    let entries: Vec<(&str, u64)> = names.iter().map(|n| (*n, 5_000)).collect();
    let d = timeline::tests::durs(&entries);
    let tl = timeline::inferred(t, &d);
    assert_eq!(tl.source, Source::Inferred);
    assert_eq!(tl.diag.ops, 23_872);
    // every kernel is known; launches of another geometry than the calibrated one are timed by name
    let g = crate::analysis::model::Geom { grid: [1, 1, 1], block: [32, 1, 1], shared_mem: 0 };
    let other = t.calls.iter().filter(|c| c.kind == Kind::Launch && t.geom(c.geom) != Some(&g)).count() as u64;
    assert_eq!((tl.diag.unknown_kernels, tl.diag.by_name_only), (0, other));
    for s in &tl.streams {
        for w in s.intervals.windows(2) {
            assert!(w[0].end <= w[1].start, "overlap on {}", s.label);
        }
        for iv in &s.intervals {
            let c = &t.calls[iv.call as usize];
            assert!(iv.start >= c.ts, "work before its submission");
        }
    }
    let ph = phases::phases(t);
    let r = gaps::analyze(t, &tl, &ph, &GapOptions::default());
    let steady = r.scopes[0].phases.iter().find(|p| p.phase == "steady").unwrap();
    let busy_share = 1.0 - steady.stats.idle_share.unwrap();
    // 17,340 launches x 5 µs = 86.7 ms (+ copies) in the phase's 1.932 s window
    assert!(busy_share > 0.044 && busy_share < 0.047, "{busy_share}");
    assert_eq!(steady.stats.count, PINNED_STEADY_GAPS);
}
// 18,071 gaps between the first and last work of the phase, and the phase's idle end
const PINNED_STEADY_GAPS: u64 = 18_072;

#[test]
fn perfetto_export_of_a_recording_with_ioctls_is_valid() {
    let t = trace("transformer_inference_ioctls");
    assert_eq!(t.ioctls.iter().filter(|i| !i.file_op).count(), 635);
    let ph = phases::phases(t);
    let tl = timeline::bound(t);
    // the same split as `tracer ioctls` (docs/ioctls.md): 495 / 44 / 96 / 0
    let rep = report::build(t, &ph, &tl);
    let per: Vec<u64> = rep.phases.iter().map(|p| p.counts.ioctls).collect();
    assert_eq!(per, [495, 44, 96, 0]);
    let mut buf = Vec::new();
    let n = perfetto::export(t, &ph, &tl, &mut buf).unwrap();
    let by_ph = perfetto::tests::validate(std::str::from_utf8(&buf).unwrap()).unwrap();
    assert_eq!(n as usize, by_ph.values().sum::<usize>());
    // X: 29,290 calls + 749 ioctl/fd ops + 4 phases + 329 GPU intervals
    assert_eq!(by_ph["X"], 29_290 + 749 + 4 + 329);
    assert_eq!(by_ph["i"], 98);
    assert_eq!((by_ph["s"], by_ph["f"]), (93, 93));
}
