//! Copies by direction and host memory kind, recorded vs replayed, both as
//! CUPTI saw them: its memcpy records say whether the host side was
//! `pageable` (staged by the driver through its own pinned buffers: slower,
//! and paced by the host) or `pinned` (DMA). Replay copies from and to host
//! memory of the recorded kind (exec/session.rs); this table checks it did,
//! copy class by copy class, and shows which class carries a copy-time error.
//! A recording made before the gpu lines carried the kinds (`src_kind`,
//! `dst_kind`) has its host kinds `not recorded`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::{Activity, Op};
use crate::recording::GpuActivity;
use tracer_format::line::GpuActivity as Measured;

/// (direction, host memory kind) of a copy.
type Class = (&'static str, String);

fn direction(name: &str) -> &'static str {
    match name {
        "memcpy_htod" => "h2d",
        "memcpy_dtoh" => "d2h",
        "memcpy_dtod" => "d2d",
        "memcpy_htoh" => "h2h",
        "memcpy_ptop" => "peer",
        _ => "other",
    }
}

/// The host side's kind for a direction: the source of h2d, the destination of d2h.
fn host_kind(dir: &str, src: Option<&str>, dst: Option<&str>) -> String {
    let k = match dir {
        "h2d" => src,
        "d2h" => dst,
        "d2d" | "peer" => Some("device"),
        _ => src,
    };
    k.unwrap_or("not recorded").to_string()
}

fn activity_direction(copy_kind: u8) -> &'static str {
    // CUpti_ActivityMemcpyKind
    match copy_kind {
        1 => "h2d",
        2 => "d2h",
        8 => "d2d",
        9 => "h2h",
        10 => "peer",
        _ => "other",
    }
}

/// Copies and ns.
type Counted = (u64, u64);

/// Copies and ns per class.
type Tally = BTreeMap<Class, Counted>;

/// The recorded (or a reference's) copies per class, from their gpu lines.
fn recorded_tally(recorded: &[GpuActivity]) -> Tally {
    let mut t = Tally::new();
    for g in recorded.iter().filter(|g| g.activity() == Some(Measured::Memcpy)) {
        let dir = direction(g.name.as_deref().unwrap_or(""));
        let e = t.entry((dir, host_kind(dir, g.src_kind.as_deref(), g.dst_kind.as_deref()))).or_default();
        e.0 += 1;
        e.1 += g.end_ts - g.ts;
    }
    t
}

/// The replayed copies per class, summed over `passes`.
fn replayed_tally(passes: &[Vec<Activity>]) -> Tally {
    let mut t = Tally::new();
    for a in passes.iter().flatten().filter(|a| a.op == Op::Memcpy) {
        let dir = activity_direction(a.copy_kind);
        let (s, d) = (crate::gpu_time::memory_kind_name(a.src_kind), crate::gpu_time::memory_kind_name(a.dst_kind));
        let e = t.entry((dir, host_kind(dir, Some(s), Some(d)))).or_default();
        e.0 += 1;
        e.1 += a.end - a.start;
    }
    t
}

/// Per class: recorded copies and µs; replayed copies and µs per pass (the
/// mean over `passes`), and the error of the replayed time. Rows by recorded
/// time, largest first.
pub fn by_class(recorded: &[GpuActivity], passes: &[Vec<Activity>]) -> Value {
    let (rec, rep) = (recorded_tally(recorded), replayed_tally(passes));
    let classes: BTreeSet<&Class> = rec.keys().chain(rep.keys()).collect();
    let mut v: Vec<(&Class, Counted, Counted)> = classes
        .into_iter()
        .map(|k| (k, rec.get(k).copied().unwrap_or_default(), rep.get(k).copied().unwrap_or_default()))
        .collect();
    v.sort_by_key(|(k, r, _)| (std::cmp::Reverse(r.1), (*k).clone()));
    let n = passes.len().max(1) as f64;
    Value::Array(
        v.into_iter()
            .map(|((dir, kind), (rn, rns), (pn, pns))| {
                let rep_us = pns as f64 / n / 1e3;
                json!({"direction": dir, "host": kind, "recorded": rn, "recorded_us": rns as f64 / 1e3,
                    "replayed_per_pass": pn as f64 / n, "replayed_us": rep_us,
                    "error_pct": super::error_pct(rep_us, rns as f64 / 1e3)})
            })
            .collect(),
    )
}

/// `--copies-against`: the replayed copies per class against several references
/// (`(name, copies)`: recordings of the same program without data capture). Per
/// class: each reference's count and µs (0 where it has none of the class), their
/// median and range, the replayed copies and µs per pass, the error against the
/// median and whether the replayed time lies inside the references' range (what one
/// more run of the program could have taken). Rows by the median reference time,
/// largest first.
pub fn against(references: &[(String, Vec<GpuActivity>)], passes: &[Vec<Activity>]) -> Value {
    let refs: Vec<Tally> = references.iter().map(|(_, c)| recorded_tally(c)).collect();
    let rep = replayed_tally(passes);
    let n = passes.len().max(1) as f64;
    let classes: BTreeSet<&Class> = refs.iter().flat_map(|t| t.keys()).chain(rep.keys()).collect();
    let mut rows: Vec<(f64, Value)> = classes
        .into_iter()
        .map(|k| {
            let (counts, us): (Vec<u64>, Vec<f64>) =
                refs.iter().map(|t| t.get(k).map_or((0, 0.0), |&(c, ns)| (c, ns as f64 / 1e3))).unzip();
            let (pn, pns) = rep.get(k).copied().unwrap_or_default();
            let rep_us = pns as f64 / n / 1e3;
            let m = crate::gpu_time::median(&us);
            let (lo, hi) = us.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
            (
                m,
                json!({"direction": k.0, "host": k.1, "reference_counts": counts, "reference_us": us,
                    "reference_median_us": m, "reference_min_us": lo, "reference_max_us": hi,
                    "replayed_per_pass": pn as f64 / n, "replayed_us": rep_us, "error_pct": super::error_pct(rep_us, m),
                    "inside_range": rep_us >= lo && rep_us <= hi}),
            )
        })
        .collect();
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    json!({
        "references": references.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
        "rows": rows.into_iter().map(|(_, r)| r).collect::<Vec<_>>(),
    })
}

/// The copies CUPTI timed in `path`: a trace (`.jsonl`, `.gz`, `.zst`) or a
/// recording directory, of the same program recorded without `--capture-data`
/// (`replay run --copies-against`): a reference for the copies whose recorded
/// times carry the recorder's data capture (docs/replay.md, *What the
/// recorder costs a copy*).
pub fn reference_copies(path: &std::path::Path) -> anyhow::Result<Vec<GpuActivity>> {
    let trace = if path.is_dir() {
        crate::recording::Recording::open(path)?.trace
    } else {
        crate::recording::trace::Trace::read(path)?
    };
    let copies: Vec<GpuActivity> = trace.gpu.into_iter().filter(|g| g.activity() == Some(Measured::Memcpy)).collect();
    if copies.is_empty() {
        anyhow::bail!(
            "{}: no copies timed by CUPTI (gpu lines of op memcpy): record the program with --gpu-timestamps",
            path.display()
        );
    }
    Ok(copies)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str, ts: u64, end: u64, src: Option<&str>, dst: Option<&str>) -> GpuActivity {
        GpuActivity {
            line: 0,
            ts,
            end_ts: end,
            pid: 1,
            op: "memcpy".into(),
            name: Some(name.into()),
            stream_id: 7,
            size: 4096,
            correlation_id: 0,
            graph_id: 0,
            src_kind: src.map(str::to_owned),
            dst_kind: dst.map(str::to_owned),
        }
    }

    fn rep(copy_kind: u8, src: u8, dst: u8, start: u64, end: u64) -> Activity {
        Activity { copy_kind, src_kind: src, dst_kind: dst, ..Activity::new(Op::Memcpy, start, end, 7) }
    }

    #[test]
    fn classes_recorded_and_replayed() {
        let r = [
            rec("memcpy_htod", 0, 10_000, Some("pageable"), Some("device")),
            rec("memcpy_htod", 20_000, 30_000, Some("pageable"), Some("device")),
            rec("memcpy_dtoh", 40_000, 42_000, Some("device"), Some("pinned")),
            rec("memcpy_dtoh", 50_000, 51_000, None, None), // an older recording's line
        ];
        // two passes: the h2d copies from pageable memory 8 µs each; the d2h one replayed from pageable memory
        let pass = || vec![rep(1, 1, 3, 0, 8_000), rep(1, 1, 3, 10_000, 18_000), rep(2, 3, 1, 20_000, 23_000)];
        let v = by_class(&r, &[pass(), pass()]);
        assert_eq!(
            v,
            json!([
                {"direction": "h2d", "host": "pageable", "recorded": 2, "recorded_us": 20.0, "replayed_per_pass": 2.0,
                 "replayed_us": 16.0, "error_pct": -20.0},
                {"direction": "d2h", "host": "pinned", "recorded": 1, "recorded_us": 2.0, "replayed_per_pass": 0.0,
                 "replayed_us": 0.0, "error_pct": -100.0},
                {"direction": "d2h", "host": "not recorded", "recorded": 1, "recorded_us": 1.0, "replayed_per_pass": 0.0,
                 "replayed_us": 0.0, "error_pct": -100.0},
                {"direction": "d2h", "host": "pageable", "recorded": 0, "recorded_us": 0.0, "replayed_per_pass": 1.0,
                 "replayed_us": 3.0, "error_pct": null}
            ])
        );
    }

    /// `--copies-against`: a trace's copies (its other gpu lines left out); a directory is
    /// read as a recording; a trace without copies timed by CUPTI, or no file, is refused
    /// with one line naming it.
    #[test]
    fn reference_copies_from_a_trace() {
        let dir = std::env::temp_dir().join(format!("copies-against-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let header = r#"{"type":"header","format":"tracer-jsonl","format_version":1,"ts":0,"pid":0}"#;
        let gpu = |op: &str, name: &str, ts: u64| {
            format!(
                r#"{{"type":"gpu","op":"{op}","name":"{name}","ts":{ts},"end_ts":{},"pid":7,"size":4096,"src_kind":"pageable","dst_kind":"device"}}"#,
                ts + 500
            )
        };
        let path = dir.join("plain.jsonl");
        let text = [
            header.to_string(),
            gpu("kernel", "k", 10),
            gpu("memcpy", "memcpy_htod", 1_000),
            gpu("memcpy", "memcpy_htod", 2_000),
        ];
        std::fs::write(&path, text.join("\n") + "\n").unwrap();
        let c = reference_copies(&path).unwrap();
        assert_eq!(
            c.iter().map(|g| (g.ts, g.end_ts, g.src_kind.as_deref())).collect::<Vec<_>>(),
            [(1_000, 1_500, Some("pageable")), (2_000, 2_500, Some("pageable"))]
        );
        let v = by_class(&c, &[vec![rep(1, 1, 3, 0, 400), rep(1, 1, 3, 600, 1_000)]]);
        assert_eq!(v[0]["host"], "pageable");
        assert_eq!((v[0]["recorded"].as_u64(), v[0]["replayed_us"].as_f64()), (Some(2), Some(0.8)));
        // Without copies: refused, naming the file and what to do.
        let none = dir.join("kernels.jsonl");
        std::fs::write(&none, [header.to_string(), gpu("kernel", "k", 10)].join("\n") + "\n").unwrap();
        let e = reference_copies(&none).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: no copies timed by CUPTI (gpu lines of op memcpy): record the program with --gpu-timestamps",
                none.display()
            )
        );
        let e = reference_copies(&dir.join("missing.jsonl")).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: cannot open the trace", dir.join("missing.jsonl").display())), "{e}");
        // A device or a pipe is refused at the open: never read forever, never waited on.
        let fifo = dir.join("fifo.jsonl");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for (p, kind) in [(std::path::Path::new("/dev/zero"), "a character device"), (fifo.as_path(), "a named pipe")] {
            assert_eq!(
                reference_copies(p).unwrap_err().to_string(),
                format!(
                    "{0}: cannot open the trace ({0}: not a regular file ({kind}): a trace must be a regular file)",
                    p.display()
                )
            );
        }
        std::fs::remove_file(&fifo).unwrap();
        // A directory is a recording: without its manifest, refused.
        let e = reference_copies(&dir).unwrap_err().to_string();
        assert!(e.contains("manifest.json: cannot read"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Several references: per class their counts and times in order, the median and range, the
    /// replayed time against the median, inside the range or not; a class one reference lacks
    /// counts 0 there.
    #[test]
    fn against_several_references() {
        let h2d = |ts: u64, end: u64| rec("memcpy_htod", ts, end, Some("pageable"), Some("device"));
        let d2h = rec("memcpy_dtoh", 0, 2_000, Some("device"), Some("pinned"));
        let refs = vec![
            ("a".to_string(), vec![h2d(0, 10_000), h2d(20_000, 30_000)]), // 20 µs
            ("b".to_string(), vec![h2d(0, 9_000), h2d(20_000, 29_000), d2h.clone()]), // 18 µs, d2h 2 µs
            ("c".to_string(), vec![h2d(0, 12_000), h2d(20_000, 32_000)]), // 24 µs
        ];
        // one pass: the h2d copies 9.5 µs each (19 µs), one d2h copy of 1 µs
        let passes = [vec![rep(1, 1, 3, 0, 9_500), rep(1, 1, 3, 10_000, 19_500), rep(2, 3, 2, 20_000, 21_000)]];
        let v = against(&refs, &passes);
        assert_eq!(v["references"], json!(["a", "b", "c"]));
        let rows = v["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        let h = &rows[0];
        assert_eq!((h["direction"].as_str(), h["host"].as_str()), (Some("h2d"), Some("pageable")));
        assert_eq!(h["reference_counts"], json!([2, 2, 2]));
        assert_eq!(h["reference_us"], json!([20.0, 18.0, 24.0]));
        assert_eq!(
            (h["reference_median_us"].as_f64(), h["reference_min_us"].as_f64(), h["reference_max_us"].as_f64()),
            (Some(20.0), Some(18.0), Some(24.0))
        );
        assert_eq!((h["replayed_per_pass"].as_f64(), h["replayed_us"].as_f64()), (Some(2.0), Some(19.0)));
        assert_eq!(h["error_pct"].as_f64().map(|e| (e * 10.0).round() / 10.0), Some(-5.0));
        assert_eq!(h["inside_range"], json!(true));
        let d = &rows[1];
        assert_eq!((d["direction"].as_str(), d["host"].as_str()), (Some("d2h"), Some("pinned")));
        assert_eq!(d["reference_counts"], json!([0, 1, 0]));
        assert_eq!((d["reference_median_us"].as_f64(), d["replayed_us"].as_f64()), (Some(0.0), Some(1.0)));
        // inside 0-2 µs; no error against a median of nothing
        assert_eq!((d["inside_range"].clone(), d["error_pct"].clone()), (json!(true), Value::Null));
        // One reference: its figures, the range a point.
        let one = against(&refs[..1], &passes);
        let h = &one["rows"][0];
        assert_eq!(
            (h["reference_median_us"].as_f64(), h["error_pct"].as_f64().map(|e| e.round())),
            (Some(20.0), Some(-5.0))
        );
        assert_eq!(h["inside_range"], json!(false));
    }
}
