//! The GPU timeline of a run recorded with `--gpu-timestamps sample`: CUPTI's
//! activity records were on only in windows (`gpu_window` lines), so every
//! launch, copy and set a process made inside one of its windows has its
//! measured interval, and the others have none.
//!
//! The timeline keeps the measured intervals where they are and infers the
//! rest with the queue simulation of [`timeline::inferred`], its durations
//! calibrated from the measured intervals themselves (per kernel name, grid,
//! block and shared memory: [`durations::calibrate`]); a kernel or copy kind
//! never seen in a window gets the durations of the machine's durations
//! library the trace carries (its `durations` line), or `--durations FILE`,
//! and else the median of the calibrated kernels (counted in the
//! calibration coverage, apart from those the library timed).
//!
//! The expected error of the calibrated busy time
//! ([`timeline::Diagnostics::expected_busy_error_pct`]): over the launches
//! measured in windows, Σ|measured − model| / Σ measured, the model being
//! the library's duration for the launch's kernel and geometry where it has
//! one (measured in other runs: an out-of-sample figure), else this run's
//! own calibration for it (a median of these very launches: their
//! dispersion only).
//!
//! A trace without windows and without `gpu` lines but with a durations
//! line gets the inferred timeline with those durations; an explicit
//! `--durations FILE` wins over them.
//!
//! Measured work is linked to its call window by window: per process and
//! window, the calls made inside it and the measured work that started
//! between its start and the next window's, in submission order by kernel
//! name (copies by direction, sets in order). A launch inside a window whose
//! record never came (CUPTI turned off before the launch reached it, or a
//! record of work still running dropped at the switch) stays unlinked and is
//! inferred; it cannot shift the pairs of later windows.
use std::collections::{HashMap, VecDeque};

use super::durations::{self, Durations};
use super::model::{Call, Dir, GpuOpKind, Kind, NO_STR, Trace};
use super::timeline::{self, Source, SubmitAt, Timeline, WorkKind};

/// The measured windows per process, sorted by start (a process's windows do not overlap).
pub struct Windows(HashMap<u32, Vec<(u64, u64)>>);

impl Windows {
    pub fn of(t: &Trace) -> Self {
        let mut m: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
        for w in &t.gpu_windows {
            m.entry(w.pid).or_default().push((w.start, w.end));
        }
        m.values_mut().for_each(|v| v.sort_unstable());
        Windows(m)
    }

    /// Whether `c` was made while its process's activity records were on.
    pub fn contain(&self, c: &Call) -> bool {
        self.window_of(c.pid, c.ts).is_some()
    }

    /// The window of process `pid` that was open at `t` (its index).
    pub fn window_of(&self, pid: u32, t: u64) -> Option<usize> {
        let i = self.last_started(pid, t)?;
        (t < self.0[&pid][i].1).then_some(i)
    }

    /// The last window of process `pid` that started at or before `t`.
    pub fn last_started(&self, pid: u32, t: u64) -> Option<usize> {
        let v = self.0.get(&pid)?;
        v.partition_point(|w| w.0 <= t).checked_sub(1)
    }
}

/// What a call and its measured work are paired by, within one window.
#[derive(Hash, PartialEq, Eq)]
enum LinkKey {
    /// Interned kernel name (launch lines and gpu lines share the table).
    Kernel(u32),
    Copy(Dir),
    Set,
}

/// How far a measured start may precede its call's entry and still be its work: the two
/// clocks are one (CUPTI's timestamp callback) or an offset measured to a few µs.
const LINK_SKEW_NS: u64 = 2_000;

/// Call index → measured (start, end), window by window (see the module header).
fn link(t: &Trace, measured: &Timeline, windows: &Windows) -> HashMap<u32, (u64, u64)> {
    let mut queues: HashMap<(u32, usize, LinkKey), VecDeque<u32>> = HashMap::new();
    for (i, c) in t.calls.iter().enumerate() {
        if c.failed() {
            continue;
        }
        let key = match c.kind {
            Kind::Launch => LinkKey::Kernel(c.kernel),
            Kind::Copy | Kind::CopyAsync => LinkKey::Copy(c.dir),
            Kind::Memset | Kind::MemsetAsync => LinkKey::Set,
            _ => continue,
        };
        if let Some(w) = windows.window_of(c.pid, c.ts) {
            queues.entry((c.pid, w, key)).or_default().push_back(i as u32);
        }
    }
    let dirs: HashMap<(u64, u32), Dir> =
        t.gpu.iter().filter(|g| g.kind == GpuOpKind::Memcpy).map(|g| ((g.start, g.name), g.dir)).collect();
    let mut all: Vec<(u64, usize, usize)> = Vec::new();
    for (si, s) in measured.streams.iter().enumerate() {
        all.extend(s.intervals.iter().enumerate().map(|(ii, iv)| (iv.start, si, ii)));
    }
    all.sort_unstable();
    let mut out = HashMap::new();
    for (start, si, ii) in all {
        let s = &measured.streams[si];
        let iv = &s.intervals[ii];
        let key = match iv.kind {
            WorkKind::Kernel => LinkKey::Kernel(iv.name),
            WorkKind::Memcpy => LinkKey::Copy(dirs.get(&(iv.start, iv.name)).copied().unwrap_or(Dir::Default)),
            WorkKind::Memset => LinkKey::Set,
            _ => continue,
        };
        let Some(w) = windows.last_started(s.key.pid, start) else { continue };
        let Some(q) = queues.get_mut(&(s.key.pid, w, key)) else { continue };
        // work cannot start before its call was entered: a record that starts before the
        // next call of its queue is of a call made before the window opened (a launch held in
        // the driver while CUPTI attached, recorded once it went through), and pairing it
        // would pair every later record of its kind with the call before its own
        if q.front().is_some_and(|&ci| t.calls[ci as usize].ts > iv.start.saturating_add(LINK_SKEW_NS)) {
            continue;
        }
        if let Some(ci) = q.pop_front() {
            out.insert(ci, (iv.start, iv.end));
        }
    }
    out
}

/// The best timeline of a trace: sampled if it has measured windows
/// (`--gpu-sample`; the kernels they never saw timed with `durations`, else
/// with the trace's durations library line), else [`timeline::gpu_intervals`]
/// (measured, inferred with `durations` or else the library line, or bound).
pub fn gpu_intervals(t: &Trace, durations: Option<&Durations>) -> Timeline {
    if !t.gpu_windows.is_empty() {
        let supplement = match durations {
            Some(d) => Some(d.clone().with_origin(format!("{} ({} entries)", d.origin(), entries(d)))),
            None => library(t).map(|d| {
                let n = entries(&d);
                d.with_origin(format!("the durations library ({n} entries)"))
            }),
        };
        return sampled_with(t, supplement);
    }
    if t.gpu.is_empty()
        && durations.is_none()
        && let Some(d) = library(t)
    {
        return timeline::inferred(t, &d);
    }
    timeline::gpu_intervals(t, durations)
}

/// The durations library's entries the trace carries (its `durations`
/// line), named by the line's `origin`.
pub fn library(t: &Trace) -> Option<Durations> {
    let (origin, f) = t.library_durations.as_ref()?;
    Some(Durations::new(f.clone()).with_origin(origin.clone()))
}

/// Kernel entries of a calibration.
fn entries(d: &Durations) -> usize {
    d.file.as_ref().map_or(0, |f| f.kernels.len())
}

/// The sampled timeline (see the module header), the kernels no window saw
/// timed with the trace's durations library line if it has one.
pub fn sampled(t: &Trace) -> Timeline {
    let supplement = library(t).map(|d| {
        let n = entries(&d);
        d.with_origin(format!("the durations library ({n} entries)"))
    });
    sampled_with(t, supplement)
}

/// The sampled timeline, `supplement` timing what the windows never saw
/// (named in the label as its origin says).
pub fn sampled_with(t: &Trace, supplement: Option<Durations>) -> Timeline {
    let measured = timeline::measured(t);
    let placed = link(t, &measured, &Windows::of(t));
    let own = durations::calibrate(t).map(Durations::new).unwrap_or_default();
    let error = expected_busy_error_pct(t, &placed, &own, supplement.as_ref());
    let check = super::window_check::check(t, &measured, &own, supplement.as_ref());
    let mut d = own.with_origin(origin(t));
    if let Some(s) = supplement {
        d = d.with_supplement(s);
    }
    let mut tl = timeline::inferred_around(t, &d, placed, SubmitAt::Return);
    if let Some(c) = &tl.diag.coverage
        && let Some(lib) = c.library.as_deref().filter(|_| c.library_launches > 0)
    {
        tl.calibrated_from = Some(format!("{} and {lib}", origin(t)));
    }
    tl.diag.expected_busy_error_pct = error;
    tl.diag.window_check = check;
    tl.source = Source::Sampled;
    for s in &mut tl.streams {
        s.source = Source::Sampled;
    }
    tl
}

/// The expected error of the calibrated busy time (see the module header):
/// over the measured launches (`placed`), the model `supplement`'s duration
/// for the kernel's geometry, else `own`'s.
fn expected_busy_error_pct(
    t: &Trace,
    placed: &HashMap<u32, (u64, u64)>,
    own: &Durations,
    supplement: Option<&Durations>,
) -> Option<f64> {
    let (mut measured, mut error) = (0u128, 0u128);
    for (&ci, &(start, end)) in placed {
        let c = &t.calls[ci as usize];
        if c.kind != Kind::Launch || c.kernel == NO_STR {
            continue;
        }
        let (name, g) = (t.name(c.kernel), t.geom(c.geom));
        let model = supplement.and_then(|s| s.exact(name, g)).or_else(|| own.kernel(name, g).map(|x| x.0));
        if let Some(model) = model {
            let m = end - start;
            measured += m as u128;
            error += m.abs_diff(model) as u128;
        }
    }
    (measured > 0).then(|| error as f64 * 100.0 / measured as f64)
}

/// "N measured windows of this run (X of Y ms)".
fn origin(t: &Trace) -> String {
    let ns: u64 = t.gpu_windows.iter().map(|w| w.end - w.start).sum();
    format!("{} measured windows of this run ({:.1} ms in all)", t.gpu_windows.len(), ns as f64 / 1e6)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analysis::gaps::{self, GapOptions};
    use crate::analysis::model::parse_str;
    use crate::analysis::phases::phases;
    use crate::analysis::timeline::tests::{launch, sync};

    /// A measured kernel of pid 1 on the legacy default stream (the geometry of `timeline::tests::launch`).
    pub(crate) fn gpu(start: u64, end: u64, kernel: &str) -> String {
        format!(
            r#"{{"ts":{start},"end_ts":{end},"pid":1,"tid":0,"type":"gpu","op":"kernel","name":"{kernel}","device":0,"stream_id":7,"stream":"0x0","grid":[1,1,1],"block":[32,1,1],"shared_mem":0}}"#
        )
    }

    /// A measured window of pid 1 (`--gpu-sample`).
    pub(crate) fn window(start: u64, end: u64) -> String {
        format!(r#"{{"ts":{start},"end_ts":{end},"pid":1,"tid":0,"type":"gpu_window","op":"measured","name":"cupti"}}"#)
    }

    /// A run whose true GPU timeline is known: every kernel starts when its
    /// launch returns or when the one before it ends, kA runs 10 µs, kB 30 µs.
    /// Returns (calls, true intervals).
    pub(crate) fn truth() -> (Vec<String>, Vec<(u64, u64, &'static str)>) {
        let mut calls = vec![];
        let mut truth = vec![];
        let mut free = 0u64;
        for i in 0..40u64 {
            // kB every fourth launch, and a kA launched 5 µs after each kB (queued behind it)
            let (ts, k, dur) = match i % 4 {
                0 => (i * 50_000, "kB", 30_000),
                1 => ((i - 1) * 50_000 + 5_000, "kA", 10_000),
                _ => (i * 50_000, "kA", 10_000),
            };
            calls.push(launch(ts, 1.0, k, "0x0"));
            let start = (ts + 1_000).max(free);
            free = start + dur;
            truth.push((start, free, k));
        }
        calls.push(sync(2_000_000, 10.0, "0x0"));
        (calls, truth)
    }

    #[test]
    fn windows_calibrate_the_rest_of_the_run_exactly() {
        let (calls, truth) = truth();
        // CUPTI on during [0, 0.3 ms) and [1.2, 1.3 ms): launches 0-5 and 24-25 measured
        let windows = [(0u64, 300_000u64), (1_200_000, 1_300_000)];
        let mut lines = calls.clone();
        lines.extend(windows.iter().map(|&(w0, w1)| window(w0, w1)));
        let mut measured = 0;
        for (i, &(s, e, k)) in truth.iter().enumerate() {
            let ts = crate::analysis::model::parse_str("x", &calls[i]).unwrap().calls[0].ts;
            if windows.iter().any(|&(a, b)| ts >= a && ts < b) {
                lines.push(gpu(s, e, k));
                measured += 1;
            }
        }
        assert_eq!(measured, 8);
        let t = parse_str("sampled", &lines.join("\n")).unwrap();
        assert_eq!(t.gpu_windows.len(), 2);
        let tl = gpu_intervals(&t, None);
        assert_eq!(tl.source, Source::Sampled);
        assert_eq!(tl.calibrated_from.as_deref(), Some("2 measured windows of this run (0.4 ms in all)"));
        let got: Vec<(u64, u64)> = tl.streams[0].intervals.iter().map(|i| (i.start, i.end)).collect();
        let want: Vec<(u64, u64)> = truth.iter().map(|&(s, e, _)| (s, e)).collect();
        assert_eq!(got, want);
        // measured ones are not approximate; the rest come from the windows' calibration
        let exact: Vec<bool> = tl.streams[0].intervals.iter().map(|i| !i.approximate).collect();
        assert!(exact.iter().all(|&x| x));
        let c = tl.diag.coverage.as_ref().unwrap();
        assert_eq!((c.kernel_launches, c.missing_launches, c.kernel_ns), (40, 0, 10 * 30_000 + 30 * 10_000));
        // the same gaps as the fully measured run
        let mut full = calls.clone();
        full.extend(truth.iter().map(|&(s, e, k)| gpu(s, e, k)));
        let tf = parse_str("full", &full.join("\n")).unwrap();
        let o = GapOptions::default();
        let a = gaps::analyze(&t, &tl, &phases(&t), &o);
        let b = gaps::analyze(&tf, &timeline::measured(&tf), &phases(&tf), &o);
        assert_eq!(a.scopes[0].overall, b.scopes[0].overall);
        // window: first start 1 µs to last end 1.961 ms
        assert_eq!(a.scopes[0].overall.idle_ns, 1_961_000 - 1_000 - (10 * 30_000 + 30 * 10_000));
    }

    /// The trace of `windows_calibrate_the_rest_of_the_run_exactly`: windows over launches
    /// 0-5 and 24-25, their records.
    fn two_windows() -> Trace {
        let (calls, truth) = truth();
        let windows = [(0u64, 300_000u64), (1_200_000, 1_300_000)];
        let mut lines = calls.clone();
        lines.extend(windows.iter().map(|&(w0, w1)| window(w0, w1)));
        for i in [0, 1, 2, 3, 4, 5, 24, 25] {
            let (s, e, k) = truth[i];
            lines.push(gpu(s, e, k));
        }
        parse_str("two windows", &lines.join("\n")).unwrap()
    }

    #[test]
    fn the_windows_check_the_model_that_leaves_them_out() {
        use crate::analysis::window_check::{WindowCheck, check, phrase};
        let t = two_windows();
        // this run's own calibration is exact: the model without the windows is the truth.
        // Window 1 from the first start (1 µs) to the last end (241 µs): 100 µs busy; window 2
        // from 1,201 to 1,241 µs: all busy. 140 of 280 µs.
        let want = WindowCheck {
            windows: 2,
            span_ns: 280_000,
            windows_too_few_records: 0,
            measured_idle_pct: 50.0,
            model_idle_pct: 50.0,
            points: 0.0,
            median_abs_points: 0.0,
            model: "this run's own calibration",
        };
        assert_eq!(sampled(&t).diag.window_check, Some(want.clone()));
        // a library that has kA at 20 µs instead of 10: window 1's three kA and the one
        // queued behind the first kB run 10 µs longer each (the last one cut at the window's
        // measured end): 130 µs busy; window 2 unchanged. 170 of 280 µs.
        let lib = crate::analysis::timeline::tests::durs(&[("kA", 20_000)]);
        let own = Durations::new(durations::calibrate(&t).unwrap());
        let c = check(&t, &timeline::measured(&t), &own, Some(&lib)).unwrap();
        let model_idle = 100.0 - 170_000.0 * 100.0 / 280_000.0;
        assert_eq!(
            c,
            WindowCheck {
                model_idle_pct: model_idle,
                points: model_idle - 50.0,
                // |Δ| per window: 30 of 240 µs (12.5 points) and 0; the lower median
                median_abs_points: 0.0,
                model: "durations library",
                ..want
            }
        );
        // a third window that measured one kernel is not checked, and says so
        let (calls, runs) = truth();
        let mut lines = calls.clone();
        lines.extend([(0u64, 300_000u64), (1_200_000, 1_300_000), (1_500_000, 1_520_000)].map(|(a, b)| window(a, b)));
        for i in [0, 1, 2, 3, 4, 5, 24, 25, 30] {
            let (s, e, k) = runs[i];
            lines.push(gpu(s, e, k));
        }
        let t3 = parse_str("three windows", &lines.join("\n")).unwrap();
        assert!(t3.calls.iter().filter(|c| c.ts >= 1_500_000 && c.ts < 1_520_000).count() == 1);
        let c3 = check(&t3, &timeline::measured(&t3), &own, None).unwrap();
        assert_eq!(c3, WindowCheck { windows_too_few_records: 1, ..want.clone() });
        assert!(phrase(Some(&c3)).ends_with("; 1 measured window(s) with fewer than 2 records not checked"));
        // only such a window: no figures, the count said
        let mut one = calls.clone();
        one.push(window(1_500_000, 1_520_000));
        let (s, e, k) = runs[30];
        one.push(gpu(s, e, k));
        let t1 = parse_str("one record", &one.join("\n")).unwrap();
        let c1 = check(&t1, &timeline::measured(&t1), &own, None).unwrap();
        assert_eq!((c1.windows, c1.windows_too_few_records, c1.span_ns), (0, 1, 0));
        assert_eq!(phrase(Some(&c1)), "; 1 measured window(s) with fewer than 2 records not checked");
        // a trace without windows has no check
        let plain = parse_str("plain", &calls.join("\n")).unwrap();
        assert_eq!(check(&plain, &timeline::measured(&plain), &own, None), None);
    }

    #[test]
    fn a_record_lost_at_a_window_end_shifts_nothing() {
        let (calls, truth) = truth();
        // windows over launches 0-5 and 24-25; the record of launch 5 (a kA,
        // the last of the first window) never came
        let windows = [(0u64, 300_000u64), (1_200_000, 1_300_000)];
        let mut lines = calls.clone();
        lines.extend(windows.iter().map(|&(w0, w1)| window(w0, w1)));
        for i in [0, 1, 2, 3, 4, 24, 25] {
            let (s, e, k) = truth[i];
            lines.push(gpu(s, e, k));
        }
        let t = parse_str("lost", &lines.join("\n")).unwrap();
        let tl = sampled(&t);
        // launch 5 is inferred (exactly, the calibration being exact), launch 25
        // keeps its own record instead of taking launch 5's place
        let got: Vec<(u64, u64)> = tl.streams[0].intervals.iter().map(|i| (i.start, i.end)).collect();
        let want: Vec<(u64, u64)> = truth.iter().map(|&(s, e, _)| (s, e)).collect();
        assert_eq!(got, want);
        assert_eq!(tl.diag.clamped, 0);
        // the old rule (one queue per kernel name over all windows) would pair
        // launch 5 with launch 25's record
        let measured = timeline::measured(&t);
        let w = Windows::of(&t);
        let old = timeline::link_measured_to_launches_of(&t, &measured, |c| w.contain(c));
        let kb_25 = truth[25].0;
        let paired_with_25: Vec<u32> = old
            .iter()
            .filter(|&&(si, ii, _)| measured.streams[si].intervals[ii].start == kb_25)
            .map(|&(_, _, ci)| ci)
            .collect();
        assert_ne!(paired_with_25, [25]);
    }

    #[test]
    fn a_record_of_a_call_made_before_the_window_pairs_with_no_call_of_it() {
        let (calls, truth) = truth();
        // a window from 1,210 µs: launch 25 (a kA at 1,205 µs, queued behind launch 24's kB)
        // was made before it, but its kernel ran from 1,231 µs, inside it, and was recorded
        let mut lines = calls.clone();
        lines.push(window(1_210_000, 1_420_000));
        for &(s, e, k) in &truth[25..=28] {
            lines.push(gpu(s, e, k));
        }
        let t = parse_str("held", &lines.join("\n")).unwrap();
        let at = |ts: u64| t.calls.iter().position(|c| c.ts == ts).unwrap() as u32;
        let placed = link(&t, &timeline::measured(&t), &Windows::of(&t));
        // launches 26-28 with their own records; launch 25's record with none (it was
        // paired with launch 26, and 26's with 27, before)
        let mut got: Vec<(u32, (u64, u64))> = placed.into_iter().collect();
        got.sort_unstable();
        let want: Vec<(u32, (u64, u64))> = [26usize, 27, 28]
            .iter()
            .map(|&i| {
                (
                    at(if i % 4 == 1 { (i as u64 - 1) * 50_000 + 5_000 } else { i as u64 * 50_000 }),
                    (truth[i].0, truth[i].1),
                )
            })
            .collect();
        assert_eq!(got, want);
        // and the timeline is the truth, nothing cut
        let tl = sampled(&t);
        let all: Vec<(u64, u64)> = tl.streams[0].intervals.iter().map(|i| (i.start, i.end)).collect();
        assert_eq!(all, truth.iter().map(|&(s, e, _)| (s, e)).collect::<Vec<_>>());
        assert_eq!(tl.diag.clamped, 0);
    }

    #[test]
    fn a_kernel_never_seen_in_a_window_is_reported() {
        let (calls, truth) = truth();
        // one window over launches 2 and 3 (kA only): kB is never measured
        let mut lines = calls.clone();
        lines.push(window(100_000, 150_001));
        for &(s, e, k) in &truth[2..4] {
            lines.push(gpu(s, e, k));
        }
        let t = parse_str("s", &lines.join("\n")).unwrap();
        let tl = sampled(&t);
        let c = tl.diag.coverage.as_ref().unwrap();
        // 10 kB launches timed with the median of the calibration (kA: 10 µs)
        assert_eq!((c.missing_launches, c.missing_ns, c.fallback_ns), (10, 100_000, 10_000));
        assert_eq!(c.missing_kernels[0].kernel, "kB");
        // a window line without its end names the line
        let e = parse_str("w", r#"{"ts":1,"pid":1,"type":"gpu_window","op":"measured"}"#).unwrap_err();
        assert_eq!(e.to_string(), "w: line 1: a `gpu_window` line needs `end_ts`");
    }
}

#[cfg(test)]
#[path = "sampled_library_tests.rs"]
mod library_tests;
