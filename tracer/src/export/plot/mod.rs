//! `tracer plot TRACE`: PNG and SVG pictures of a trace (docs/plots.md).
//! `input` holds the plain data the figures are drawn from, `from_trace`
//! fills it from a trace file, `timeline`, `gap_hist` and `phase_bars` draw,
//! `bins` reduces any number of events to pixel columns and buckets.
//! `compare` (`--compare`): two traces' GPU timelines on one axis and their
//! GPU time per kernel family (`compare_kernels`, `family`). `figures`:
//! their numbers as JSON (`--json`).
pub mod axis;
pub mod bins;
pub mod compare;
pub mod compare_kernels;
#[cfg(test)]
mod compare_tests;
pub mod draw;
pub mod family;
pub mod figures;
pub mod from_trace;
pub mod gap_hist;
pub mod input;
pub mod numbers;
pub mod phase_bars;
pub mod style;
pub mod timeline;

#[cfg(test)]
mod render_tests;
#[cfg(test)]
pub mod synth;

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use plotters::prelude::*;

use draw::Area;

#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    Png,
    Svg,
    #[default]
    Both,
}

impl Format {
    fn exts(self) -> &'static [&'static str] {
        match self {
            Format::Png => &["png"],
            Format::Svg => &["svg"],
            Format::Both => &["png", "svg"],
        }
    }
}

/// Draws one figure of size `size` to `path` (PNG or SVG by its extension).
pub fn save(
    path: &Path,
    size: (u32, u32),
    draw_png: impl FnOnce(&Area<BitMapBackend>) -> anyhow::Result<()>,
    draw_svg: impl FnOnce(&Area<SVGBackend>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let ctx = || format!("cannot write {}", path.display());
    if path.extension().is_some_and(|e| e == "svg") {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
            draw_svg(&root).with_context(ctx)?;
            root.present().with_context(ctx)?;
        }
        std::fs::write(path, xml_safe(&svg).as_bytes()).with_context(ctx)?;
    } else {
        let root = BitMapBackend::new(path, size).into_drawing_area();
        draw_png(&root).with_context(ctx)?;
        root.present().with_context(ctx)?;
    }
    Ok(())
}

/// `svg` with the characters XML 1.0 forbids (C0 controls but TAB, LF and
/// CR; U+FFFE, U+FFFF) and those that would hide or reorder a label (DEL,
/// C1, bidi overrides) shown as escapes, `\x1b` (analysis/inert.rs): a
/// name from the trace may hold any of them, and an SVG with one does not
/// parse. plotters escapes `&`, `<`, `>` and quotes itself.
pub fn xml_safe(svg: &str) -> std::borrow::Cow<'_, str> {
    use crate::analysis::inert;
    let bad =
        |c: char| (inert::is_unsafe(c) && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{fffe}' | '\u{ffff}');
    if !svg.chars().any(bad) {
        return std::borrow::Cow::Borrowed(svg);
    }
    let mut out = String::with_capacity(svg.len() + 64);
    for c in svg.chars() {
        if bad(c) {
            inert::push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// "reading NAME: N lines" on a terminal, once reading a trace takes over a second.
pub struct ReadProgress {
    name: String,
    tty: bool,
    start: std::time::Instant,
}

impl ReadProgress {
    pub fn new(name: String) -> Self {
        ReadProgress {
            name,
            tty: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            start: std::time::Instant::now(),
        }
    }

    /// After line `n` (shown every 100,000 lines).
    pub fn line(&self, n: u64) {
        if self.tty && n.is_multiple_of(100_000) && self.start.elapsed().as_secs() >= 1 {
            eprint!("\rreading {}: {} lines", self.name, numbers::thousands(n));
        }
    }

    /// The end, `n` lines read.
    pub fn done(&self, n: u64) {
        if self.tty && self.start.elapsed().as_secs() >= 1 {
            eprintln!("\rreading {}: {} lines", self.name, numbers::thousands(n));
        }
    }
}

pub struct Opts {
    pub format: Format,
    pub width: u32,
    pub max_threads: usize,
    /// Timeline window in seconds since the start of the trace.
    pub from_s: Option<f64>,
    pub to_s: Option<f64>,
    /// Print the figures' numbers as JSON instead of drawing them.
    pub json: bool,
}

/// Narrows the timeline to [from, to] seconds since its origin.
pub fn zoom(tl: &mut input::Timeline, from_s: Option<f64>, to_s: Option<f64>) -> anyhow::Result<()> {
    let (a, b) =
        crate::analysis::filter::window_ns(tl.origin_ns, tl.t1_ns, from_s, to_s).map_err(anyhow::Error::msg)?;
    // Without --from the window starts where the timeline does (it may start after its origin).
    let a = if from_s.is_none() { tl.t0_ns } else { a };
    if b <= a {
        anyhow::bail!("--from must be before --to (the trace lasts {:.3} s)", (tl.t1_ns - tl.origin_ns) as f64 / 1e9);
    }
    tl.t0_ns = a;
    tl.t1_ns = b;
    Ok(())
}

/// "_21.75-22.5s" for a zoomed timeline (so it does not replace the whole
/// one), "" otherwise.
pub fn window_suffix(o: &Opts) -> String {
    if o.from_s.is_none() && o.to_s.is_none() {
        return String::new();
    }
    let f = |v: Option<f64>| v.map(|v| format!("{v}")).unwrap_or_default();
    format!("_{}-{}s", f(o.from_s), f(o.to_s))
}

/// Writes the three figures for `data` into `dir` as `<stem>_timeline.<ext>`
/// (`<stem>_timeline_<from>-<to>s.<ext>` when zoomed), `<stem>_gaps.<ext>`
/// and `<stem>_phases.<ext>`; returns the paths.
pub fn write_all(data: &input::PlotData, dir: &Path, stem: &str, o: &Opts) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create directory {}", dir.display()))?;
    let tl_opts = timeline::Opts { width: o.width, max_threads: o.max_threads, ..Default::default() };
    let mut out = Vec::new();
    for ext in o.format.exts() {
        let p = dir.join(format!("{stem}_timeline{}.{ext}", window_suffix(o)));
        let tl = &data.timeline;
        save(
            &p,
            timeline::size(tl, &tl_opts),
            |a| timeline::draw(a, tl, &tl_opts),
            |a| timeline::draw(a, tl, &tl_opts),
        )?;
        out.push(p);
        let p = dir.join(format!("{stem}_gaps.{ext}"));
        let g = &data.gaps;
        let w = o.width.min(1400);
        save(&p, gap_hist::size(g, w), |a| gap_hist::draw(a, g, w), |a| gap_hist::draw(a, g, w))?;
        out.push(p);
        let p = dir.join(format!("{stem}_phases.{ext}"));
        let b = &data.phases;
        save(&p, phase_bars::size(b, w), |a| phase_bars::draw(a, b, w), |a| phase_bars::draw(a, b, w))?;
        out.push(p);
    }
    Ok(out)
}

/// The file name without `.jsonl`, `.jsonl.gz`, `.jsonl.zst`, `.json`, `.gz`, `.zst`.
pub fn stem(trace: &Path) -> String {
    if trace.as_os_str() == "-" {
        return "stdin".into();
    }
    let mut s = trace.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "trace".into());
    if let Some(t) = s.strip_suffix(".zst") {
        s = t.to_string();
    }
    for ext in [".gz", ".jsonl", ".json"] {
        if let Some(t) = s.strip_suffix(ext) {
            s = t.to_string();
        }
    }
    s
}

/// `tracer plot`; `load_trace` as in [`from_trace::load`].
pub fn run(trace: &Path, dir: &Path, o: &Opts, load_trace: from_trace::LoadTrace) -> anyhow::Result<()> {
    let t = std::time::Instant::now();
    let mut data = from_trace::load(trace, load_trace)?;
    zoom(&mut data.timeline, o.from_s, o.to_s).map_err(|e| crate::error::UsageError(e.to_string()))?;
    if o.json {
        println!("{}", serde_json::to_string_pretty(&figures::figures(&data))?);
        return Ok(());
    }
    let read_s = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    let paths = write_all(&data, dir, &stem(trace), o)?;
    for p in &paths {
        println!("{}", p.display());
    }
    eprintln!(
        "read {} in {read_s:.1} s, drew {} files in {:.1} s",
        trace.display(),
        paths.len(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems() {
        assert_eq!(stem(Path::new("traces/transformer_inference.jsonl.gz")), "transformer_inference");
        assert_eq!(stem(Path::new("run.jsonl")), "run");
        assert_eq!(stem(Path::new("x")), "x");
        assert_eq!(stem(Path::new("-")), "stdin");
        let o = |from_s, to_s| Opts { format: Format::Png, width: 800, max_threads: 4, from_s, to_s, json: false };
        assert_eq!(window_suffix(&o(None, None)), "");
        assert_eq!(window_suffix(&o(Some(21.75), Some(22.5))), "_21.75-22.5s");
        assert_eq!(window_suffix(&o(Some(3.0), None)), "_3-s");
    }
}
