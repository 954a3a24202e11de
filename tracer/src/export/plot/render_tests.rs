//! Rendering tests: real PNG and SVG files from small and large inputs.
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::input::*;
use super::style::kind_color;
use super::*;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracer-plot-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Decodes a PNG fully; returns (width, height, RGB pixels).
fn read_png(p: &Path) -> (u32, u32, Vec<u8>) {
    let bytes = std::fs::read(p).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}: PNG signature", p.display());
    assert_eq!(&bytes[12..16], b"IHDR");
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    let mut dec = png::Decoder::new(std::io::Cursor::new(bytes)).read_info().unwrap();
    let mut buf = vec![0; dec.output_buffer_size()];
    let info = dec.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (w, h));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (w, h, buf)
}

fn count_color(rgb: &[u8], c: plotters::style::RGBColor) -> usize {
    rgb.chunks(3).filter(|p| p == &[c.0, c.1, c.2]).count()
}

/// Parses an SVG; returns its text contents and the numbers of <rect>s and <polygon>s.
fn read_svg(p: &Path) -> (Vec<String>, usize, usize) {
    let s = std::fs::read_to_string(p).unwrap();
    let doc = roxmltree::Document::parse(&s).unwrap_or_else(|e| panic!("{}: not XML: {e}", p.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let texts = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "text")
        .map(|n| n.children().filter_map(|t| t.text()).collect::<String>().trim().to_string())
        .collect();
    let count = |tag: &str| doc.descendants().filter(|n| n.tag_name().name() == tag).count();
    (texts, count("rect"), count("polygon"))
}

fn draw_timeline(tl: &Timeline, dir: &Path, o: &timeline::Opts) -> (PathBuf, PathBuf) {
    let (png, svg) = (dir.join("t.png"), dir.join("t.svg"));
    for p in [&png, &svg] {
        save(p, timeline::size(tl, o), |a| timeline::draw(a, tl, o), |a| timeline::draw(a, tl, o)).unwrap();
    }
    (png, svg)
}

fn has(texts: &[String], want: &str) -> bool {
    texts.iter().any(|t| t == want)
}

#[test]
fn small_timeline_png_and_svg() {
    let (mut tl, gaps) = synth::timeline(10, 2);
    assert_eq!(synth::slice_count(&tl), 10);
    // Free text from markers is escaped in the SVG.
    tl.phases[2].label = "generate <fp16> & \"kv\"".into();
    let dir = tmpdir("small");
    let o = timeline::Opts::default();
    let (png, svg) = draw_timeline(&tl, &dir, &o);
    let (w, h, rgb) = read_png(&png);
    assert_eq!((w, h), timeline::size(&tl, &o));
    assert_eq!(w, 1600);
    // At 600 px the legend (five kinds) wraps onto a second line: the figure gets taller.
    let narrow = timeline::Opts { width: 600, ..o };
    assert_eq!(timeline::kinds_present(&tl).len(), 5);
    assert_eq!(timeline::size(&tl, &narrow), (600, h + 22));
    // Each kind present is drawn in its colour somewhere (slices and legend swatch).
    for k in [Kind::Launch, Kind::GpuMeasured, Kind::GpuInferred] {
        assert!(count_color(&rgb, kind_color(k)) > 0, "{k:?}");
    }
    let (texts, _, _) = read_svg(&svg);
    for want in [
        "time since start of trace (µs)",
        "0",
        "200",
        "tid 1000 (main) · launcher",
        "GPU 0 · stream 7",
        "GPU 0 · stream 8",
        "GPU power (W)",
        "phases",
        "CPU: CUDA driver calls per thread",
        "launch",
        "GPU busy (measured)",
        "GPU busy (inferred)",
        "GPU 0 (synthetic)",
        "generate <fp16> & \"kv\"",
    ] {
        assert!(has(&texts, want), "{want:?} not in {texts:?}");
    }
    // Gap histogram and phase bars.
    let (gp, gs) = (dir.join("g.png"), dir.join("g.svg"));
    for p in [&gp, &gs] {
        save(p, gap_hist::size(&gaps, 1200), |a| gap_hist::draw(a, &gaps, 1200), |a| gap_hist::draw(a, &gaps, 1200))
            .unwrap();
    }
    assert_eq!((read_png(&gp).0, read_png(&gp).1), gap_hist::size(&gaps, 1200));
    let (texts, _, _) = read_svg(&gs);
    for want in ["gap length (log scale; buckets 1-2-5 per decade)", "1 µs", "1 ms", "10 s", "gaps", "time in gaps"] {
        assert!(has(&texts, want), "{want:?} not in {texts:?}");
    }
    let bars = PhaseBars {
        title: "phases".into(),
        notes: vec![],
        bars: vec![
            PhaseBar { label: "load".into(), seconds: 2.0, joules: Some(300.0), uncertain: false },
            PhaseBar { label: "generate".into(), seconds: 6.0, joules: None, uncertain: false },
        ],
    };
    let (bp, bs) = (dir.join("b.png"), dir.join("b.svg"));
    for p in [&bp, &bs] {
        save(p, phase_bars::size(&bars, 900), |a| phase_bars::draw(a, &bars, 900), |a| phase_bars::draw(a, &bars, 900))
            .unwrap();
    }
    assert_eq!((read_png(&bp).0, read_png(&bp).1), phase_bars::size(&bars, 900));
    let (texts, _, _) = read_svg(&bs);
    for want in ["time (s)", "energy (J)", "load", "generate", "2.00 s (25%)", "300 J (avg 150 W)", "n/a"] {
        assert!(has(&texts, want), "{want:?} not in {texts:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn empty_inputs_still_draw() {
    let dir = tmpdir("empty");
    let tl = Timeline { title: "empty".into(), ..Default::default() };
    let (png, svg) = draw_timeline(&tl, &dir, &timeline::Opts::default());
    read_png(&png);
    let (texts, _, _) = read_svg(&svg);
    assert!(has(&texts, "no driver calls in this trace"), "{texts:?}");
    let g = Gaps::default();
    let p = dir.join("g.svg");
    save(&p, gap_hist::size(&g, 800), |a| gap_hist::draw(a, &g, 800), |a| gap_hist::draw(a, &g, 800)).unwrap();
    assert!(has(&read_svg(&p).0, "no gaps"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A million slices on 20 threads: rows are folded, and the SVG holds a
/// bounded number of rectangles (binned per pixel column, never per event).
#[test]
fn large_timeline_is_binned() {
    let (mut tl, _) = synth::timeline(1_000_000, 20);
    assert_eq!(synth::slice_count(&tl), 1_000_000);
    // And 100,000 phases and 100,000 free marks: drawn at most once per pixel column.
    let step = (tl.t1_ns - tl.t0_ns) / 100_000;
    tl.phases = (0..100_000u64)
        .map(|i| Phase { label: format!("p{i}"), start_ns: tl.t0_ns + i * step, end_ns: tl.t0_ns + (i + 1) * step })
        .collect();
    tl.marks =
        (0..100_000u64).map(|i| Mark { ts_ns: tl.t0_ns + i * step, label: "m".into(), iteration: false }).collect();
    let dir = tmpdir("large");
    let o = timeline::Opts { width: 1200, ..Default::default() };
    let (png, svg) = draw_timeline(&tl, &dir, &o);
    assert_eq!((read_png(&png).0, read_png(&png).1), timeline::size(&tl, &o));
    let (texts, rects, polygons) = read_svg(&svg);
    // The plot is 1200 - 240 (labels) - 30 (margin) = 930 columns wide: 931 pixel positions.
    assert!(polygons <= 931, "{polygons} mark triangles");
    assert!(has(&texts, "+9 other threads"), "{texts:?}");
    assert!(has(&texts, "tid 1000 (main) · launcher"));
    assert!(has(&texts, "time since start of trace (s)"), "{texts:?}");
    // 14 rows × 930 pixel columns × 4 (a pale one and up to three kinds per
    // column), plus at most one phase band per column.
    assert!(rects < 14 * 930 * 4 + 931, "{rects} rects");
    assert!(std::fs::metadata(&svg).unwrap().len() < 8 << 20);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The measurement quoted in docs/plots.md:
/// `cargo test --release -p tracer --bin tracer plot::render_tests::render_10m -- --ignored --nocapture`
#[test]
#[ignore]
fn render_10m() {
    let t = Instant::now();
    let (tl, gaps) = synth::timeline(10_000_000, 16);
    println!("built {} slices in {:.2} s", synth::slice_count(&tl), t.elapsed().as_secs_f64());
    // TRACER_PLOT_KEEP=DIR keeps the images there, to look at them.
    let keep = std::env::var_os("TRACER_PLOT_KEEP").map(PathBuf::from);
    let dir = keep.clone().unwrap_or_else(|| tmpdir("10m"));
    std::fs::create_dir_all(&dir).unwrap();
    let o = timeline::Opts::default();
    for ext in ["png", "svg"] {
        let p = dir.join(format!("t.{ext}"));
        let t = Instant::now();
        save(&p, timeline::size(&tl, &o), |a| timeline::draw(a, &tl, &o), |a| timeline::draw(a, &tl, &o)).unwrap();
        println!("timeline {ext}: {:.2} s, {} bytes", t.elapsed().as_secs_f64(), std::fs::metadata(&p).unwrap().len());
    }
    let t = Instant::now();
    let p = dir.join("g.png");
    save(&p, gap_hist::size(&gaps, 1400), |a| gap_hist::draw(a, &gaps, 1400), |a| gap_hist::draw(a, &gaps, 1400))
        .unwrap();
    println!("gap histogram png ({} gaps): {:.2} s", gaps.gaps_ns.len(), t.elapsed().as_secs_f64());
    if keep.is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
