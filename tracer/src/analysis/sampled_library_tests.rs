//! The durations library line in the timelines of sampled.rs.
use super::tests::{gpu, truth, window};
use super::*;
use crate::analysis::durations_file::{DurationsFile, FORMAT, KernelEntry, durations_line};
use crate::analysis::model::parse_str;
use crate::analysis::timeline::tests::durs;

const ORIGIN: &str = "durations library /var/lib/tracer/durations.json (NVIDIA H200, driver 580.159.04, 3 runs)";

/// A durations line with these kernels (the geometry of `timeline::tests::launch`).
fn library_line(kernels: &[(&str, u64)]) -> String {
    let f = DurationsFile {
        format: FORMAT.into(),
        version: 1,
        source: "durations library".into(),
        gpu: Some("NVIDIA H200".into()),
        kernels: kernels
            .iter()
            .map(|&(k, ns)| KernelEntry {
                kernel: k.into(),
                grid: [1, 1, 1],
                block: [32, 1, 1],
                shared_mem: 0,
                count: 100,
                median_ns: ns,
                p10_ns: ns,
                p90_ns: ns,
            })
            .collect(),
        copies: vec![],
    };
    durations_line(3_000_000, ORIGIN, &f).to_string()
}

fn intervals(tl: &Timeline) -> Vec<(u64, u64)> {
    tl.streams[0].intervals.iter().map(|i| (i.start, i.end)).collect()
}

#[test]
fn a_library_line_alone_gives_the_timeline_exactly() {
    let (calls, truth) = truth();
    let mut lines = calls.clone();
    lines.push(library_line(&[("kA", 10_000), ("kB", 30_000)]));
    let t = parse_str("lib", &lines.join("\n")).unwrap();
    let tl = gpu_intervals(&t, None);
    assert_eq!(tl.source, Source::Inferred);
    assert_eq!(tl.calibrated_from.as_deref(), Some(ORIGIN));
    assert_eq!(crate::analysis::basis::label(&tl), format!("inferred (calibrated from {ORIGIN})"));
    let want: Vec<(u64, u64)> = truth.iter().map(|&(s, e, _)| (s, e)).collect();
    assert_eq!(intervals(&tl), want);
    let c = tl.diag.coverage.as_ref().unwrap();
    assert_eq!((c.kernel_launches, c.missing_launches, c.library_launches), (40, 0, 0));
    assert_eq!(tl.diag.expected_busy_error_pct, None);
    // an explicit --durations FILE wins
    let d = durs(&[("kA", 1_000), ("kB", 1_000)]).with_origin("other.json");
    let tl = gpu_intervals(&t, Some(&d));
    assert_eq!(tl.calibrated_from.as_deref(), Some("other.json"));
    assert_eq!(tl.streams[0].intervals[0].dur(), 1_000);
    // without the line: the bound timeline
    let t = parse_str("bound", &calls.join("\n")).unwrap();
    assert_eq!(gpu_intervals(&t, None).source, Source::Bound);
}

#[test]
fn a_kernel_no_window_saw_gets_its_library_duration() {
    let (calls, truth) = truth();
    // one window over launches 2 and 3 (kA only): kB is never measured; the
    // library has kB at 30 µs and kA at 12 µs (the run's own kA, 10 µs, wins)
    let mut lines = calls.clone();
    lines.push(window(100_000, 150_001));
    for &(s, e, k) in &truth[2..4] {
        lines.push(gpu(s, e, k));
    }
    lines.push(library_line(&[("kA", 12_000), ("kB", 30_000)]));
    let t = parse_str("s", &lines.join("\n")).unwrap();
    let tl = gpu_intervals(&t, None);
    assert_eq!(tl.source, Source::Sampled);
    let want: Vec<(u64, u64)> = truth.iter().map(|&(s, e, _)| (s, e)).collect();
    assert_eq!(intervals(&tl), want);
    assert_eq!(
        crate::analysis::basis::label(&tl),
        "inferred (calibrated from 1 measured windows of this run (0.1 ms in all) and the durations library (2 \
         entries))"
    );
    let c = tl.diag.coverage.as_ref().unwrap();
    // 10 kB launches from the library (30 µs each), none with the fallback median
    assert_eq!((c.kernel_launches, c.missing_launches, c.library_launches, c.library_ns), (40, 0, 10, 300_000));
    assert_eq!(
        c.sentence(),
        "calibration coverage: all 40 kernel launches have a calibrated duration; from the durations library (2 \
         entries): 10 launches (300.0 µs)"
    );
    // the two measured kA (10 µs each) against the library's 12 µs: 4 of 20 µs
    assert_eq!(tl.diag.expected_busy_error_pct, Some(20.0));
    // and the report's header and `tracer gaps` say it, and that the window was too small to check
    // (launch 3's kernel ran after it: it holds launch 2's record only, all busy by construction)
    assert!(
        crate::analysis::basis::sentence(&tl).ends_with(
            "; expected error of the busy time about 20.0 % (this run's measured kernels against the durations the \
             rest was timed with); 1 measured window(s) with fewer than 2 records not checked"
        ),
        "{}",
        crate::analysis::basis::sentence(&tl)
    );
    let r = crate::analysis::gaps::analyze(&t, &tl, &crate::analysis::phases::phases(&t), &Default::default());
    let text = crate::analysis::gaps::render(&r);
    assert!(text.contains("entries)); expected error of the busy time about 20.0 % ("), "{text}");
    // the same run without the library line: kB at the median of the calibration (10 µs)
    let without: Vec<String> = lines[..lines.len() - 1].to_vec();
    let t = parse_str("s", &without.join("\n")).unwrap();
    let tl = gpu_intervals(&t, None);
    let c = tl.diag.coverage.as_ref().unwrap();
    assert_eq!((c.missing_launches, c.fallback_ns, c.library_launches), (10, 10_000, 0));
    assert_eq!(tl.calibrated_from.as_deref(), Some("1 measured windows of this run (0.1 ms in all)"));
    // the run's own calibration: the median of its two equal measurements, no error
    assert_eq!(tl.diag.expected_busy_error_pct, Some(0.0));
    // an explicit --durations FILE takes the library's place beside the windows
    let d = durs(&[("kB", 30_000)]).with_origin("h200.json");
    let tl = gpu_intervals(&t, Some(&d));
    assert_eq!(intervals(&tl), want);
    assert_eq!(
        tl.calibrated_from.as_deref(),
        Some("1 measured windows of this run (0.1 ms in all) and h200.json (1 entries)")
    );
}

#[test]
fn the_expected_error_of_the_calibration() {
    let (calls, truth) = truth();
    // a window over launches 0-3 (kB, kA, kA, kA); kA measured 10, 14 and 12 µs
    let mut lines = calls.clone();
    lines.push(window(0, 150_001));
    let mut end = 0;
    for (i, &(s, _, k)) in truth[..4].iter().enumerate() {
        let dur = [30_000, 10_000, 14_000, 12_000][i];
        let s = s.max(end);
        end = s + dur;
        lines.push(gpu(s, end, k));
    }
    let t = parse_str("e", &lines.join("\n")).unwrap();
    let tl = gpu_intervals(&t, None);
    // own calibration: kA median 12 µs (nearest rank), kB 30 µs:
    // |10 − 12| + |14 − 12| + |12 − 12| + |30 − 30| = 4 of 66 µs
    assert_eq!(tl.diag.expected_busy_error_pct, Some(4.0 * 100.0 / 66.0));
    // the library's kB at 27 µs: 4 + 3 of 66 µs
    lines.push(library_line(&[("kB", 27_000)]));
    let t = parse_str("e", &lines.join("\n")).unwrap();
    assert_eq!(gpu_intervals(&t, None).diag.expected_busy_error_pct, Some(7.0 * 100.0 / 66.0));
    // a window in which nothing was launched measured nothing
    let mut lines = calls.clone();
    lines.push(window(2_100_000, 2_200_000));
    let t = parse_str("n", &lines.join("\n")).unwrap();
    assert_eq!(gpu_intervals(&t, None).diag.expected_busy_error_pct, None);
}
