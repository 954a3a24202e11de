//! `tracer plot --compare` on two hand-built traces (exact figures, rows,
//! alignment, images, errors) and on a committed recording compared with itself.
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::compare::*;
use super::compare_kernels::FamilyRow;
use super::input::{Gaps, Kind, Mark, Section, Slice};
use super::numbers::{Tally, diff_pct, fmt_pct};
use super::style::kind_color;
use super::*;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracer-compare-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A recording: two overlapping kernels on streams 7 and 13 (union 3 µs), a
/// copy, a set given by `duration_us` only, the calls that submitted them,
/// two markers.
const RECORDED: &str = r#"{"type":"header","format":"tracer-jsonl","format_version":1,"command":["python3","x.py"]}
{"ts":1000000500,"pid":5,"tid":5,"type":"marker","op":"iteration","name":"marker","label":"0"}
{"ts":1000000600,"pid":5,"tid":5,"type":"kernel","op":"launch","name":"cuLaunchKernel","duration_us":0.05}
{"ts":1000000700,"pid":5,"tid":5,"type":"kernel","op":"launch","name":"cuLaunchKernel","duration_us":0.05}
{"ts":1000001000,"end_ts":1000003000,"pid":5,"tid":0,"type":"gpu","op":"kernel","source":"cupti","device":0,"stream_id":7,"name":"nvjet_sm90_hsh_64x8_64x16_4x2_h_bz_bias_NNT"}
{"ts":1000002500,"end_ts":1000004000,"pid":5,"tid":0,"type":"gpu","op":"kernel","source":"cupti","device":0,"stream_id":13,"name":"_ZN2at6native29vectorized_elementwise_kernelILi4E"}
{"ts":1000009000,"pid":5,"tid":5,"type":"memcpy","op":"htod","name":"cuMemcpyHtoDAsync_v2","duration_us":0.5}
{"ts":1000010000,"end_ts":1000011000,"pid":5,"tid":0,"type":"gpu","op":"memcpy","source":"cupti","device":0,"stream_id":7,"name":"memcpy_htod","size":4096}
{"ts":1000015000,"pid":5,"tid":5,"type":"marker","op":"mark","name":"marker","label":"sampled"}
{"ts":1000019500,"pid":5,"tid":5,"type":"memset","op":"memset","name":"cuMemsetD8Async","duration_us":0.5}
{"ts":1000020000,"duration_us":0.25,"pid":5,"tid":0,"type":"gpu","op":"memset","source":"cupti","device":0,"stream_id":7,"name":"memset"}
{"type":"footer"}
"#;

/// Its replay: the GEMM 10 % slower, everything on two other streams, the
/// idle time shorter, one line without an end; `line`: the recording's line
/// of the call that submitted the op; the recording's markers.
const REPLAYED: &str = r#"{"type":"header","format":"tracer-jsonl","format_version":1,"source":"replay","recording":"x.rec","command":["replay","x.rec"],"gpus":[{"bus":"0000:00:06.0","model":"H100"}],"replay":{"mode":"sequence","pass":3,"shift_ns":-5}}
{"ts":5000000000,"end_ts":5000002200,"duration_us":2.2,"pid":9,"tid":0,"type":"gpu","op":"kernel","source":"cupti","device":0,"stream_id":20,"name":"nvjet_sm90_hsh_64x8_64x16_4x2_h_bz_bias_NNT","line":3}
{"ts":5000002200,"end_ts":5000003700,"pid":9,"tid":0,"type":"gpu","op":"kernel","source":"cupti","device":0,"stream_id":20,"name":"_ZN2at6native29vectorized_elementwise_kernelILi4E","line":4}
{"ts":5000004000,"pid":9,"tid":0,"type":"gpu","op":"kernel","source":"cupti","device":0,"stream_id":20,"name":"k"}
{"ts":5000009000,"end_ts":5000010000,"pid":9,"tid":0,"type":"gpu","op":"memcpy","source":"cupti","device":0,"stream_id":21,"name":"memcpy_htod","size":4096,"line":7}
{"ts":5000010000,"end_ts":5000010250,"pid":9,"tid":0,"type":"gpu","op":"memset","source":"cupti","device":0,"stream_id":21,"name":"memset","line":10}
{"ts":1000000500,"pid":5,"tid":0,"type":"marker","op":"iteration","label":"0"}
{"ts":1000015000,"pid":5,"tid":0,"type":"marker","op":"mark","label":"sampled"}
{"type":"footer"}
"#;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn pair(dir: &Path) -> (PathBuf, PathBuf, Pair) {
    let (r, o) = (write(dir, "rec.jsonl", RECORDED), write(dir, "replay-timeline.jsonl", REPLAYED));
    let other = load(&o, "OTHER", &HashSet::new()).unwrap();
    let p = Pair { recorded: load(&r, "RECORDED", &linked_lines(&other)).unwrap(), other };
    (r, o, p)
}

fn t(count: u64, ns: u64) -> Tally {
    Tally { count, ns }
}

#[test]
fn exact_figures_of_both_traces() {
    let dir = tmpdir("figures");
    let (_, _, p) = pair(&dir);
    assert_eq!((p.recorded.skipped, p.other.skipped), (0, 1));
    assert_eq!(p.other.replay.as_deref(), Some("mode sequence, pass 3"));
    assert_eq!(p.other_label(), "replayed");
    let r = stats(&p.recorded.ops);
    assert_eq!((r.first_ns, r.last_ns, r.span_ns()), (1_000_001_000, 1_000_020_250, 19_250));
    // [1000, 4000) ∪ [10000, 11000) ∪ [20000, 20250): the kernels overlap by 500 ns.
    assert_eq!(r.busy_ns, 4_250);
    assert_eq!((r.kernels, r.copies, r.sets), (t(2, 3_500), t(1, 1_000), t(1, 250)));
    // gemm, attention, elementwise, reduction, copy, set, other.
    assert_eq!(r.families, [t(1, 2_000), t(0, 0), t(1, 1_500), t(0, 0), t(1, 1_000), t(1, 250), t(0, 0), t(0, 0)]);
    assert_eq!(r.gaps_ns, [6_000, 9_000]);
    let o = stats(&p.other.ops);
    assert_eq!((o.first_ns, o.span_ns(), o.busy_ns), (5_000_000_000, 10_250, 4_950));
    assert_eq!(o.families, [t(1, 2_200), t(0, 0), t(1, 1_500), t(0, 0), t(1, 1_000), t(1, 250), t(0, 0), t(0, 0)]);
    assert_eq!(o.gaps_ns, [5_300]);
    assert_eq!(diff_pct(r.busy_ns, o.busy_ns), Some(700.0 / 4_250.0 * 100.0));
    assert_eq!(fmt_pct(diff_pct(r.busy_ns, o.busy_ns)), "+16.5 %");
    assert_eq!((diff_pct(0, 0), diff_pct(0, 5), diff_pct(2_000, 2_200)), (Some(0.0), None, Some(10.0)));
    let k = kernel_bars(&p);
    assert_eq!(
        k.rows,
        vec![
            FamilyRow { family: "gemm", recorded: t(1, 2_000), other: t(1, 2_200) },
            FamilyRow { family: "elementwise", recorded: t(1, 1_500), other: t(1, 1_500) },
            FamilyRow { family: "copy", recorded: t(1, 1_000), other: t(1, 1_000) },
            FamilyRow { family: "set", recorded: t(1, 250), other: t(1, 250) },
        ]
    );
    assert_eq!(k.other_label, "replayed");
    let s = summary(&p);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[1],
        "          GPU busy 4.25 µs in a 19.2 µs span (22 %); 2 kernels 3.50 µs, 1 copy 1.00 µs, 1 set 250 ns"
    );
    assert_eq!(
        lines[2],
        "          idle gaps: 2, 15.0 µs in all; median 6.00 µs, p90 9.00 µs, p99 9.00 µs, longest 9.00 µs"
    );
    assert_eq!(
        lines[6],
        "replayed / recorded: GPU busy ×1.165 (+16.5 %), span ×0.532 (-46.8 %), kernel time ×1.057 (+5.7 %), idle \
         ×0.353 (-64.7 %)"
    );
    assert_eq!(lines[7], "note: replayed: 1 gpu line without a start or an end left out");
    assert_eq!(lines[10], "gemm                      2.00 µs (1)              2.20 µs (1)    +10.0 %");
    assert_eq!(lines[13], "set                        250 ns (1)               250 ns (1)     +0.0 %");
    assert_eq!(lines.len(), 14);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rows_labels_and_aligned_starts() {
    let dir = tmpdir("rows");
    let (r, o, p) = pair(&dir);
    let tl = timeline(&p);
    // The later start is time 0; the recording is shifted forward onto it.
    assert_eq!((tl.origin_ns, tl.t0_ns, tl.t1_ns), (5_000_000_000, 5_000_000_000, 5_000_019_250));
    let shift = 5_000_000_000 - 1_000_001_000;
    let [rec, rep] = &tl.sections[..] else { panic!("{} sections", tl.sections.len()) };
    assert_eq!(rec.title, format!("recorded: {}", r.display()));
    assert_eq!(rep.title, format!("replayed: {} (replay, mode sequence, pass 3)", o.display()));
    let labels = |s: &Section| -> Vec<String> { s.pinned.iter().chain(&s.tracks).map(|t| t.label.clone()).collect() };
    assert_eq!(labels(rec), ["recorded · GPU 0 busy", "GPU 0 · stream 7", "GPU 0 · stream 13"]);
    assert_eq!(labels(rep), ["replayed · GPU 0 busy", "GPU 0 · stream 20", "GPU 0 · stream 21"]);
    let sl = |a: u64, b: u64, kind| Slice { start_ns: a, end_ns: b, kind };
    let m = Kind::GpuMeasured;
    // Both busy rows start exactly at the origin.
    assert_eq!(
        rec.pinned[0].slices,
        vec![
            sl(5_000_000_000, 5_000_003_000, m),
            sl(5_000_009_000, 5_000_010_000, m),
            sl(5_000_019_000, 5_000_019_250, m)
        ]
    );
    let rp = Kind::GpuReplayed;
    assert_eq!(rep.pinned[0].slices, vec![sl(5_000_000_000, 5_000_003_700, rp), sl(5_000_009_000, 5_000_010_250, rp)]);
    assert_eq!(rec.tracks[1].slices, vec![sl(5_000_001_500, 5_000_003_000, m)]);
    assert_eq!(
        rec.marks,
        vec![
            Mark { ts_ns: 1_000_000_500 + shift, label: "0".into(), iteration: true },
            Mark { ts_ns: 1_000_015_000 + shift, label: "sampled".into(), iteration: false }
        ]
    );
    // The replay's markers (the recording's): where the replay started the
    // first op submitted after each, found through the `line` links: the
    // GEMM (line 3, after "0") and the memset (line 10, after "sampled").
    assert_eq!(
        p.recorded.line_ts,
        [(3, 1_000_000_600), (4, 1_000_000_700), (7, 1_000_009_000), (10, 1_000_019_500)].into()
    );
    assert_eq!(
        rep.marks,
        vec![
            Mark { ts_ns: 5_000_000_000, label: "0".into(), iteration: true },
            Mark { ts_ns: 5_000_010_000, label: "sampled".into(), iteration: false }
        ]
    );
    assert_eq!(
        tl.notes[3],
        "replayed idle gaps: 1, 5.30 µs in all; median 5.30 µs, p90 5.30 µs, p99 5.30 µs, longest 5.30 µs"
    );
    assert_eq!(
        tl.notes[5],
        "Starts aligned: time 0 is each trace's first GPU interval (the replayed one began +4.00 s from the recorded \
         one on the clock)."
    );
    assert_eq!(
        tl.notes[6],
        "replayed markers: where the replay started the first GPU op the recording submitted after each marker \
         (linked by the gpu lines' `line`); recorded markers: when the program marked them."
    );
    assert_eq!(tl.notes[7], "replayed: 1 gpu line without a start or an end left out");
    assert_eq!(timeline::kinds_present(&tl), vec![Kind::GpuMeasured, Kind::GpuReplayed]);
    // --from/--to count from the aligned start.
    let mut z = tl.clone();
    zoom(&mut z, Some(0.000_009), Some(0.000_011)).unwrap();
    assert_eq!((z.t0_ns, z.t1_ns), (5_000_009_000, 5_000_011_000));
    // Recorded: its copy [9000, 10000); replayed: copy and set [9000, 10250).
    assert_eq!((window_busy_ns(&z, 0), window_busy_ns(&z, 1)), (1_000, 1_250));
    assert_eq!(
        window_note(&z),
        "In this 2.00 µs window: GPU busy recorded 1.00 µs (50 %), replayed 1.25 µs (62 %); ratio ×1.250 (+25.0 %)"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SVG text contents.
fn svg_texts(p: &Path) -> Vec<String> {
    let s = std::fs::read_to_string(p).unwrap();
    let doc = roxmltree::Document::parse(&s).unwrap_or_else(|e| panic!("{}: not XML: {e}", p.display()));
    doc.descendants()
        .filter(|n| n.tag_name().name() == "text")
        .map(|n| n.children().filter_map(|t| t.text()).collect::<String>().trim().to_string())
        .collect()
}

/// Decodes a PNG: (width, height, RGB bytes).
fn read_png_rgb(p: &Path) -> (u32, u32, Vec<u8>) {
    let mut dec = png::Decoder::new(std::io::Cursor::new(std::fs::read(p).unwrap())).read_info().unwrap();
    let mut buf = vec![0; dec.output_buffer_size()];
    let info = dec.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

fn png_size(p: &Path) -> (u32, u32) {
    let b = std::fs::read(p).unwrap();
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "{}", p.display());
    (u32::from_be_bytes(b[16..20].try_into().unwrap()), u32::from_be_bytes(b[20..24].try_into().unwrap()))
}

#[test]
fn images_written() {
    let dir = tmpdir("images");
    let (r, o, p) = pair(&dir);
    let out = dir.join("plots");
    let opts = Opts { format: Format::Both, width: 1200, max_threads: 12, from_s: None, to_s: None, json: false };
    // OTHER given as the recording directory holding replay-timeline.jsonl.
    let paths = compare::run(&r, &dir, &out, &opts).unwrap();
    assert_eq!(other_path(&dir).unwrap(), o);
    assert_eq!(other_path(&o).unwrap(), o);
    let names: Vec<_> = paths.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(
        names,
        [
            "compare_timeline.png",
            "compare_kernels.png",
            "compare_gaps.png",
            "compare_timeline.svg",
            "compare_kernels.svg",
            "compare_gaps.svg"
        ]
    );
    let tl = timeline(&p);
    let tl_opts = timeline::Opts { width: 1200, ..Default::default() };
    assert_eq!(png_size(&paths[0]), timeline::size(&tl, &tl_opts));
    assert_eq!(png_size(&paths[1]), compare_kernels::size(&kernel_bars(&p), 1200));
    let gaps = gap_bars(&p);
    assert_eq!(gaps.gaps_ns, [6_000, 9_000]);
    assert_eq!(gaps.compare.as_ref().unwrap().gaps_ns, [5_300]);
    assert_eq!(png_size(&paths[2]), gap_hist::size(&gaps, 1200));
    // Two series: one more stats line and a legend line than one series.
    let one = Gaps { compare: None, ..gaps.clone() };
    assert_eq!(gap_hist::size(&gaps, 1200).1, gap_hist::size(&one, 1200).1 + 17 + 24);
    let texts = svg_texts(&paths[5]);
    for want in [
        "recorded: 2 gaps, 15.0 µs in total; median 6.00 µs, p90 9.00 µs, p99 9.00 µs, longest 9.00 µs",
        "replayed: 1 gap, 5.30 µs in total; median 5.30 µs, p90 5.30 µs, p99 5.30 µs, longest 5.30 µs",
        "recorded",
        "replayed",
        "gap length (log scale; buckets 1-2-5 per decade)",
    ] {
        assert!(texts.iter().any(|t| t == want), "{want:?} not in {texts:?}");
    }
    // Both series' bars in their colours (all three gaps fall in the 5-10 µs bucket).
    let (_, _, rgb) = read_png_rgb(&paths[2]);
    for c in [compare_kernels::recorded_color(), compare_kernels::other_color()] {
        assert!(rgb.chunks(3).any(|px| px == [c.0, c.1, c.2]), "{c:?} not drawn");
    }
    let texts = svg_texts(&paths[3]);
    for want in [
        "recorded · GPU 0 busy",
        "replayed · GPU 0 busy",
        "GPU 0 · stream 7",
        "GPU 0 · stream 13",
        "GPU 0 · stream 20",
        "GPU 0 · stream 21",
        "GPU busy (measured)",
        "GPU busy (replayed)",
        "time since each trace's first GPU interval (µs)",
        "0",
        "18",
    ] {
        assert!(texts.iter().any(|t| t == want), "{want:?} not in {texts:?}");
    }
    assert!(texts.contains(&format!("replayed: {} (replay, mode sequence, pass 3)", o.display())), "{texts:?}");
    // A markers band in each section, the free mark labelled in both.
    for want in ["iterations, marks", "sampled"] {
        assert_eq!(texts.iter().filter(|t| *t == want).count(), 2, "{want:?} in {texts:?}");
    }
    let texts = svg_texts(&paths[4]);
    for want in [
        "gemm",
        "elementwise",
        "copy",
        "set",
        "recorded",
        "replayed",
        "2.00 µs, 1 kernel",
        "2.20 µs, 1 kernel (+10.0 %)",
        "250 ns, 1 set (+0.0 %)",
        "GPU time (µs)",
    ] {
        assert!(texts.iter().any(|t| t == want), "{want:?} not in {texts:?}");
    }
    // Zoomed: a separate file name, the window on the shared axis.
    let zoomed = Opts { format: Format::Svg, from_s: Some(0.000_009), ..opts };
    let paths = compare::run(&r, &o, &out, &zoomed).unwrap();
    assert_eq!(paths[0].file_name().unwrap(), "compare_timeline_0.000009-s.svg");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn traces_without_gpu_intervals_are_refused() {
    let dir = tmpdir("errors");
    let (r, _, _) = pair(&dir);
    let bare = write(
        &dir,
        "calls.jsonl",
        &RECORDED.lines().filter(|l| !l.contains(r#""type":"gpu""#)).collect::<Vec<_>>().join("\n"),
    );
    let e = compare::run(
        &r,
        &bare,
        &dir,
        &Opts { format: Format::Png, width: 800, max_threads: 4, from_s: None, to_s: None, json: false },
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "OTHER {} has no measured GPU intervals: make it with `replay` (which writes \
             NAME.rec/replay-timeline.jsonl) or `tracer record --gpu-timestamps`",
            bare.display()
        )
    );
    let e = load(&bare, "RECORDED", &HashSet::new()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "RECORDED {} has no measured GPU intervals: record it with `tracer record --gpu-timestamps`",
            bare.display()
        )
    );
    // A recording directory without a replay's timeline.
    let rec = committed("replay_check.rec");
    assert_eq!(
        other_path(&rec).unwrap_err().to_string(),
        format!(
            "OTHER {} is a directory without replay-timeline.jsonl: run `replay {}` first (it writes it there), or \
             name a trace file",
            rec.display(),
            rec.display()
        )
    );
    // Not a trace at all: the reader's error, naming the file and line.
    let junk = write(&dir, "junk.jsonl", "{\"type\":\"header\"}\nnot json\n");
    let e = format!("{:#}", load(&junk, "OTHER", &HashSet::new()).unwrap_err());
    assert!(e.contains("junk.jsonl") && e.contains("line 2"), "{e}");
    assert!(!dir.join("compare_timeline.png").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

fn committed(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces").join(name)
}

/// A committed H100 recording compared with itself: equal busy time, 0.0 %
/// in every family, both starts at the origin.
#[test]
fn committed_trace_against_itself() {
    let path = committed("simple_inference_gpu.jsonl.gz");
    let none = HashSet::new();
    let p = Pair { recorded: load(&path, "RECORDED", &none).unwrap(), other: load(&path, "OTHER", &none).unwrap() };
    assert_eq!(p.other_label(), "compared");
    let (a, b) = (stats(&p.recorded.ops), stats(&p.other.ops));
    assert_eq!(a, b);
    assert_eq!((a.kernels.count, a.copies.count, a.sets.count), (88, 10, 44));
    assert_eq!((a.busy_ns, a.span_ns()), (BUSY, SPAN));
    let k = kernel_bars(&p);
    let fams: Vec<_> = k.rows.iter().map(|r| (r.family, r.recorded.count)).collect();
    assert_eq!(fams, [("gemm", 44), ("elementwise", 44), ("copy", 10), ("set", 44)]);
    for r in &k.rows {
        assert_eq!(r.recorded, r.other);
        assert_eq!(diff_pct(r.recorded.ns, r.other.ns), Some(0.0), "{}", r.family);
    }
    assert!(summary(&p).contains("compared / recorded: GPU busy ×1.000 (+0.0 %), span ×1.000 (+0.0 %)"));
    let tl = timeline(&p);
    assert_eq!(tl.origin_ns, a.first_ns);
    // Not a replay: the second trace's rows are "compared", in the same blue.
    assert_eq!(timeline::kinds_present(&tl), vec![Kind::GpuMeasured, Kind::GpuCompared]);
    assert_eq!(kind_color(Kind::GpuCompared), kind_color(Kind::GpuReplayed));
    // The same busy intervals at the same places on the axis.
    let spans = |k: usize| -> Vec<(u64, u64)> {
        tl.sections[k].pinned.iter().flat_map(|t| &t.slices).map(|s| (s.start_ns, s.end_ns)).collect()
    };
    assert_eq!(spans(0), spans(1));
    // 142 intervals that never overlap: 142 busy intervals, 141 gaps between them.
    assert_eq!((spans(0).len(), a.gaps_ns.len()), (142, 141));
    // A recording directory (NAME.rec) is read through its trace.jsonl.
    let rec = load(&committed("replay_check.rec"), "RECORDED", &none).unwrap();
    assert_eq!(rec.ops.len(), 9);
}

const BUSY: u64 = 2_161_740;
const SPAN: u64 = 120_896_703;

#[test]
fn streams_by_id_then_handle_and_lines_left_out() {
    let mut side = Side::new("x");
    let line = |extra: &str| -> serde_json::Value {
        serde_json::from_str(&format!(r#"{{"ts":10,"end_ts":20,"type":"gpu","op":"kernel","name":"k"{extra}}}"#))
            .unwrap()
    };
    for extra in [
        r#","stream":"0x1a""#,
        r#","stream_id":9,"stream":"0x1a""#,
        r#","stream":null"#,
        r#","stream_id":10,"device":1"#,
        r#","stream_id":2,"source":"inferred""#,
    ] {
        side.add(&line(extra));
    }
    side.add(&serde_json::json!({"ts":30,"type":"gpu","op":"memset"}));
    side.add(&serde_json::json!({"ts":30,"end_ts":29,"type":"gpu","op":"memset"}));
    let side = side.finish();
    assert_eq!((side.ops.len(), side.skipped, side.inferred), (4, 2, 1));
    let p = Pair { recorded: side.clone(), other: side };
    let tl = timeline(&p);
    let labels: Vec<_> = tl.sections[1].pinned.iter().chain(&tl.sections[1].tracks).map(|t| t.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "compared · GPU 0 busy",
            "compared · GPU 1 busy",
            "GPU 0 · stream 9",
            "GPU 0 · stream 0x1a",
            "GPU 0 · stream ?",
            "GPU 1 · stream 10"
        ]
    );
    // Busy is per GPU: the same 10 ns on two GPUs is 20 ns of GPU time.
    assert_eq!(stats(&p.recorded.ops).busy_ns, 20);
    assert_eq!(
        tl.notes[tl.notes.len() - 4..],
        [
            "recorded: 2 gpu lines without a start or an end left out",
            "recorded: 1 inferred gpu line (not measured) left out",
            "compared: 2 gpu lines without a start or an end left out",
            "compared: 1 inferred gpu line (not measured) left out"
        ]
    );
}

#[test]
fn replayed_marks_follow_the_linked_ops() {
    let op = |start: u64, line: Option<u64>| GpuOp {
        device: 0,
        stream: Stream::Id(1),
        start_ns: start,
        end_ns: start + 10,
        op: Op::Kernel,
        family: "other",
        line,
        call_ts: None,
    };
    let mark = |ts: u64, label: &str| Mark { ts_ns: ts, label: label.into(), iteration: false };
    let mut rec = Side::new("rec");
    rec.line_ts = [(10, 100), (11, 200), (12, 300)].into();
    let mut rep = Side::new("rep");
    // Replayed out of recorded order (two streams); line 13 is not in the recording's map.
    rep.ops = vec![op(1_000, Some(10)), op(1_500, Some(12)), op(1_200, Some(11)), op(1_700, Some(13)), op(1_800, None)];
    rep.marks =
        vec![mark(50, "before all"), mark(150, "a"), mark(200, "at 11"), mark(250, "b"), mark(301, "after all")];
    let got: Vec<(u64, String)> = replayed_marks(&rec, &rep).unwrap().into_iter().map(|m| (m.ts_ns, m.label)).collect();
    let want = [(1_000, "before all"), (1_200, "a"), (1_200, "at 11"), (1_500, "b"), (1_810, "after all")];
    assert_eq!(got, want.map(|(t, l)| (t, l.to_string())));
    assert_eq!(linked_lines(&rep), [10, 11, 12, 13].into());
    // No link resolves: None (the markers stay where the trace put them).
    rec.line_ts.clear();
    assert_eq!(replayed_marks(&rec, &rep), None);
    // The replay's own `recorded_call_ts` (the timeline file carries it) needs no recording lines.
    rep.ops = vec![
        GpuOp { call_ts: Some(100), ..op(1_000, Some(10)) },
        GpuOp { call_ts: Some(300), ..op(1_500, Some(12)) },
        GpuOp { call_ts: Some(200), ..op(1_200, Some(11)) },
    ];
    let got: Vec<(u64, String)> = replayed_marks(&rec, &rep).unwrap().into_iter().map(|m| (m.ts_ns, m.label)).collect();
    let want = [(1_000, "before all"), (1_200, "a"), (1_200, "at 11"), (1_500, "b"), (1_510, "after all")];
    assert_eq!(got, want.map(|(t, l)| (t, l.to_string())));
}

/// Extreme times (a corrupt or hostile trace) give figures, not a panic.
#[test]
fn extreme_times_do_not_panic() {
    let mut a = Side::new("a");
    for v in [
        serde_json::json!({"ts": 0u64, "end_ts": u64::MAX, "type": "gpu", "op": "kernel", "name": "k"}),
        serde_json::json!({"ts": 0u64, "end_ts": u64::MAX, "type": "gpu", "op": "kernel", "name": "k", "device": 1}),
        serde_json::json!({"ts": u64::MAX, "type": "marker", "op": "mark", "label": "x"}),
        serde_json::json!({"ts": -5, "duration_us": 1e300, "type": "gpu", "op": "memset"}),
    ] {
        a.add(&v);
    }
    let mut b = Side::new("b");
    b.add(&serde_json::json!({"ts": 1_000u64, "end_ts": 2_000u64, "type": "gpu", "op": "memcpy", "line": u64::MAX}));
    b.add(&serde_json::json!({"ts": 5u64, "type": "marker", "op": "iteration", "label": "0"}));
    let p = Pair { recorded: a.finish(), other: b.finish() };
    assert_eq!(p.recorded.skipped, 1);
    let st = stats(&p.recorded.ops);
    assert_eq!((st.busy_ns, st.kernels.ns), (u64::MAX, u64::MAX));
    let tl = timeline(&p);
    assert_eq!(tl.t1_ns, u64::MAX);
    assert_eq!(tl.sections[0].marks[0].ts_ns, u64::MAX);
    let dir = tmpdir("extreme");
    let png = dir.join("t.png");
    let o = timeline::Opts::default();
    save(&png, timeline::size(&tl, &o), |a| timeline::draw(a, &tl, &o), |a| timeline::draw(a, &tl, &o)).unwrap();
    let k = kernel_bars(&p);
    let png = dir.join("k.png");
    save(
        &png,
        compare_kernels::size(&k, 800),
        |a| compare_kernels::draw(a, &k, 800),
        |a| compare_kernels::draw(a, &k, 800),
    )
    .unwrap();
    assert!(summary(&p).contains("n/a"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The lines `replay` writes to replay-timeline.jsonl, as in its own test
/// (replay/src/gpu_time/timeline_file.rs): read as the contract says.
#[test]
fn reads_the_replay_writers_lines() {
    let text = [
        r#"{"type":"header","ts":100,"pid":5,"tid":0,"format":"tracer-jsonl","format_version":1,"source":"replay","recording":"x.rec","command":["replay","x.rec"],"gpus":[{"bus":"0000:00:06.0","model":"H100"}],"gpu_timestamps":{"enabled":true,"library":"/l/libcupti.so.13","clock":"CLOCK_MONOTONIC ns of the replay, shifted by replay.shift_ns"},"replay":{"mode":"sequence","pass":2,"shift_ns":-900}}"#,
        r#"{"block":[32,1,1],"context_id":1,"correlation_id":0,"device":0,"duration_us":0.5,"end_ts":600,"grid":[1,1,1],"line":42,"name":"_Z1kv","op":"kernel","pid":5,"recorded_call_ts":77,"shared_mem":0,"source":"cupti","stream":null,"stream_id":13,"tid":0,"ts":100,"type":"gpu"}"#,
        r#"{"context_id":1,"correlation_id":0,"device":0,"direction":"h2d","duration_us":0.1,"end_ts":800,"name":"memcpy_htod","op":"memcpy","pid":5,"size":4096,"source":"cupti","stream":null,"stream_id":7,"tid":0,"ts":700,"type":"gpu"}"#,
        r#"{"ts":90,"pid":5,"tid":0,"type":"marker","op":"iteration","label":"0","tokens":20}"#,
        r#"{"type":"footer","ts":800,"pid":5,"tid":0,"gpu_records":2}"#,
    ];
    let mut side = Side::new("replay-timeline.jsonl");
    for l in text {
        side.add(&serde_json::from_str(l).unwrap());
    }
    let side = side.finish();
    assert_eq!(side.source.as_deref(), Some("replay"));
    assert_eq!(side.replay.as_deref(), Some("mode sequence, pass 2"));
    let k = |start_ns, end_ns, stream, op, family, line: Option<u64>| GpuOp {
        device: 0,
        stream: Stream::Id(stream),
        start_ns,
        end_ns,
        op,
        family,
        line,
        call_ts: line.map(|_| 77),
    };
    assert_eq!(side.ops, [k(100, 600, 13, Op::Kernel, "other", Some(42)), k(700, 800, 7, Op::Copy, "copy", None)]);
    assert_eq!(side.marks, [Mark { ts_ns: 90, label: "0".into(), iteration: true }]);
    assert_eq!((side.skipped, side.inferred), (0, 0));
    assert_eq!(linked_lines(&side), [42].into());
}
