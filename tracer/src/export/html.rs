//! `tracer report TRACE --html FILE`: the report as one self-contained HTML
//! page (no network: styles, script and data inline): the verdict and the
//! phase table, iterations, top kernels, the idle-gap histogram, flame graphs
//! of GPU busy and idle time per stack (html/flame_svg.rs), a zoomable
//! timeline (canvas, a little embedded JS), energy, the ioctl summary, and
//! per-GPU and per-process tables.
//!
//! The timeline carries every interval up to [`MAX_INTERVALS`]; beyond that
//! each row's intervals closer than a gap (doubled until they fit) are
//! merged, and the page says so. Time is encoded as deltas in units of
//! 100 ns, so the file stays small (docs/analysis.md#html-report).
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

pub mod flame_svg;

use crate::analysis::gaps::{GapReport, fmt_ns};
use crate::analysis::kernel_names::NameStyle;
use crate::analysis::model::{NO_STR, Trace};
use crate::analysis::report::{KernelRow, PeriodRow, Report};
use crate::analysis::short_names::ShortNames;
use crate::analysis::stats::Bucket;
use crate::analysis::timeline::Timeline;
use crate::analysis::verdict::Verdict;

/// Intervals the timeline holds at most (all rows together).
pub const MAX_INTERVALS: usize = 300_000;
/// Time unit of the embedded timeline: 100 ns.
const UNIT_NS: u64 = 100;

/// HTML text: `&`, `<`, `>`, `"` escaped.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            _ => o.push(c),
        }
    }
    o
}

/// A string as a JSON/JS literal that is safe inside `<script>`.
fn js_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default().replace("</", "<\\/")
}

/// One row of the timeline: intervals [start, end) in ns, sorted and
/// disjoint, with a name index per interval (-1: none or merged).
struct Row {
    group: String,
    label: String,
    /// Tooltip/legend detail (the stream handle, the source).
    title: String,
    kind: &'static str,
    iv: Vec<(u64, u64, i64)>,
}

/// Merges intervals separated by less than `gap` ns (names dropped where merged).
fn merged(iv: &[(u64, u64, i64)], gap: u64) -> Vec<(u64, u64, i64)> {
    let mut out: Vec<(u64, u64, i64)> = Vec::with_capacity(iv.len());
    for &(a, b, n) in iv {
        match out.last_mut() {
            Some(l) if a < l.1.saturating_add(gap) => {
                l.1 = l.1.max(b);
                l.2 = -1;
            }
            _ => out.push((a, b, n)),
        }
    }
    out
}

/// Sorts and makes disjoint (overlaps merged, names kept where alone).
fn normalized(mut iv: Vec<(u64, u64, i64)>) -> Vec<(u64, u64, i64)> {
    iv.sort_unstable_by_key(|x| (x.0, x.1));
    let mut out: Vec<(u64, u64, i64)> = Vec::with_capacity(iv.len());
    for (a, b, n) in iv {
        match out.last_mut() {
            Some(l) if a < l.1 => {
                if b > l.1 {
                    l.1 = b;
                    l.2 = -1;
                }
            }
            _ => out.push((a, b.max(a), n)),
        }
    }
    out
}

/// The timeline's rows: phases, each process's driver calls, each GPU stream.
fn rows(t: &Trace, r: &Report, tl: &Timeline, names: &mut Names) -> Vec<Row> {
    let mut rows = Vec::new();
    if !r.phases.is_empty() {
        let iv = r.phases.iter().map(|p| (p.start, p.end, names.id(&p.name))).collect();
        rows.push(Row {
            group: "phases".into(),
            label: format!("phases (pid {})", r.main_pid.unwrap_or(0)),
            title: "the main process's phases".into(),
            kind: "phase",
            iv: normalized(iv),
        });
    }
    let mut calls: BTreeMap<u32, Vec<(u64, u64, i64)>> = BTreeMap::new();
    for c in t.calls.iter().filter(|c| c.is_driver_call()) {
        calls.entry(c.pid).or_default().push((c.ts, c.end().max(c.ts + 1), -1));
    }
    for (pid, iv) in calls {
        rows.push(Row {
            group: "CPU".into(),
            label: format!("pid {pid} {} · CUDA calls", t.process_name(pid)),
            title: "time inside CUDA driver calls".into(),
            kind: "cpu",
            iv: normalized(iv),
        });
    }
    let stream_names = crate::analysis::stream_names::names(t, tl);
    let mut streams: Vec<&crate::analysis::timeline::StreamTimeline> = tl.streams.iter().collect();
    streams.sort_by_key(|s| (s.device, s.key.pid, s.key.handle, s.key.tid));
    for s in streams {
        let iv = s
            .intervals
            .iter()
            .map(|i| {
                let n = if i.name != NO_STR {
                    names.kernel(t, i.name)
                } else {
                    names.id(match i.kind {
                        crate::analysis::timeline::WorkKind::Pending => "possibly busy (bound timeline)",
                        k => k.as_str(),
                    })
                };
                (i.start, i.end.max(i.start + 1), n)
            })
            .collect();
        rows.push(Row {
            group: format!("GPU {}", s.device),
            label: format!(
                "GPU {} · pid {} · {}",
                s.device,
                s.key.pid,
                stream_names.get(&s.key).cloned().unwrap_or_else(|| s.label.clone())
            ),
            title: format!("{} [{}]", s.label, s.source.as_str()),
            kind: "gpu",
            iv: normalized(iv),
        });
    }
    rows
}

/// Names used by the timeline, each once.
struct Names {
    list: Vec<String>,
    ids: HashMap<String, i64>,
    kernels: HashMap<u32, i64>,
    style: NameStyle,
    short: ShortNames,
}

impl Names {
    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.list.len() as i64;
        self.list.push(s.to_string());
        self.ids.insert(s.to_string(), i);
        i
    }
    fn kernel(&mut self, t: &Trace, k: u32) -> i64 {
        if let Some(&i) = self.kernels.get(&k) {
            return i;
        }
        let name = self.short.display(t.name(k), self.style).into_owned();
        let i = self.id(&name);
        self.kernels.insert(k, i);
        i
    }
}

/// Fits the rows into [`MAX_INTERVALS`]: the smallest gap (a power of two
/// of 100 ns) under which merging makes them fit; 0 when they fit as they are.
fn fit(rows: &mut [Row]) -> u64 {
    let total = |rows: &[Row]| rows.iter().map(|r| r.iv.len()).sum::<usize>();
    if total(rows) <= MAX_INTERVALS {
        return 0;
    }
    let mut gap = UNIT_NS;
    loop {
        let n: usize = rows.iter().map(|r| merged(&r.iv, gap).len()).sum();
        if n <= MAX_INTERVALS {
            break;
        }
        gap *= 2;
    }
    for r in rows.iter_mut() {
        r.iv = merged(&r.iv, gap);
    }
    gap
}

/// The timeline data as a JS object literal.
fn timeline_data(
    t0: u64,
    span: (u64, u64),
    gpu_window: Option<(u64, u64)>,
    rows: &[Row],
    names: &Names,
    merged_gap: u64,
) -> String {
    let u = |ns: u64| ns.saturating_sub(t0) / UNIT_NS;
    let mut s = String::with_capacity(rows.iter().map(|r| r.iv.len() * 14).sum::<usize>() + 4096);
    let _ = write!(s, "{{\"unit_ns\":{UNIT_NS},\"span\":[{},{}],", u(span.0), u(span.1));
    match gpu_window {
        Some((a, b)) => {
            let _ = write!(s, "\"gpu\":[{},{}],", u(a), u(b));
        }
        None => s.push_str("\"gpu\":null,"),
    }
    let _ = write!(s, "\"merged_ns\":{merged_gap},\"names\":[");
    for (i, n) in names.list.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&js_str(n));
    }
    s.push_str("],\"rows\":[");
    for (ri, r) in rows.iter().enumerate() {
        if ri > 0 {
            s.push_str(",\n");
        }
        let _ = write!(
            s,
            "{{\"group\":{},\"label\":{},\"title\":{},\"kind\":\"{}\",\"d\":[",
            js_str(&r.group),
            js_str(&r.label),
            js_str(&r.title),
            r.kind
        );
        // per interval: gap since the previous end, duration (units), name
        let mut prev = 0u64;
        for (i, &(a, b, n)) in r.iv.iter().enumerate() {
            let (a, b) = (u(a), u(b).max(u(a) + 1));
            if i > 0 {
                s.push(',');
            }
            let _ = write!(s, "{},{},{}", a.saturating_sub(prev), b - a, n);
            prev = b;
        }
        s.push_str("]}");
    }
    s.push_str("]}");
    s
}

fn period_table(out: &mut String, title: &str, rows: &[PeriodRow], tokens: bool, bound: bool) {
    if rows.is_empty() {
        return;
    }
    let ranked = rows.iter().any(|p| p.rank.is_some());
    let _ = write!(out, "<table><caption>{}</caption><tr><th>{}</th>", esc(title), esc(title));
    if ranked {
        out.push_str("<th>rank</th>");
    }
    for h in ["time", "calls", "ioctls", "launches", "kernels", "sync"] {
        let _ = write!(out, "<th>{h}</th>");
    }
    let _ = write!(
        out,
        "<th>{}</th><th>{}</th><th>energy</th>",
        if bound { "idle ≥" } else { "GPU busy" },
        if bound { "idle % ≥" } else { "idle %" }
    );
    if tokens {
        out.push_str("<th>tokens</th><th>ms/token</th><th>J/token</th>");
    }
    out.push_str("</tr>\n");
    for p in rows {
        let c = &p.counts;
        let _ = write!(out, "<tr><td class=l>{}</td>", esc(&p.name));
        if ranked {
            let _ = write!(out, "<td>{}</td>", p.rank.map_or("-".into(), |r| r.to_string()));
        }
        let _ = write!(
            out,
            "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            fmt_ns(p.dur_ns),
            c.calls,
            c.ioctls,
            c.launches,
            c.distinct_kernels,
            fmt_ns(c.sync_ns),
            p.gpu_busy_ns.or(p.gpu_idle_lower_bound_ns).map_or("-".into(), fmt_ns),
            p.gpu_idle_share.or(p.gpu_idle_share_lower_bound).map_or("-".into(), |x| format!("{:.1}", 100.0 * x)),
            p.energy.as_ref().map_or("-".into(), |e| esc(&energy_text(e)))
        );
        if tokens {
            let _ = write!(
                out,
                "<td>{}</td><td>{}</td><td>{}</td>",
                p.tokens.map_or("-".into(), |x| x.to_string()),
                p.ms_per_token.map_or("-".into(), |x| format!("{x:.2}")),
                p.joules_per_token.map_or("-".into(), |x| format!("{x:.3}"))
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

/// An energy figure, as the text report writes it (one definition: analysis/figures.rs).
fn energy_text(e: &crate::analysis::energy::Energy) -> String {
    crate::analysis::figures::energy_text(&Some(e.clone()))
}

fn kernel_table(out: &mut String, title: &str, rows: &[KernelRow], style: NameStyle) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<table><caption>{}</caption><tr><th>launches</th><th>GPU time</th><th class=l>kernel</th></tr>",
        esc(title)
    );
    for k in rows {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=l title=\"{}\">{}</td></tr>",
            k.launches,
            k.gpu_ns.map_or("-".into(), fmt_ns),
            esc(k.name(NameStyle::Full)),
            esc(k.name(style))
        );
    }
    out.push_str("</table>\n");
}

/// The two flame graphs: GPU busy time (launches when unknown) and GPU idle
/// time per stack, with the figures in their titles.
fn stacks_html(out: &mut String, st: &crate::analysis::stack_report::StackReport) {
    use flame_svg::{Unit, svg};
    // `, 10.0 µs of 1.59 ms without a stack`
    let no_stack = |n: u64, of: u64, unit: &dyn Fn(u64) -> String| {
        if n == 0 { String::new() } else { format!(", {} of {} without a stack", unit(n), unit(of)) }
    };
    match st.busy_ns {
        Some(busy) => {
            let title = format!(
                "GPU busy time per stack: {} ({}) of {} launches{}{}",
                fmt_ns(busy),
                st.busy_basis,
                st.launches,
                no_stack(st.busy_without_stack_ns.unwrap_or(0), busy, &|n| fmt_ns(n)),
                if st.sampling_rule.is_some() {
                    " (launch stacks sampled: the other launches are under [no stack])"
                } else {
                    ""
                }
            );
            svg(out, "flame-busy", &title, &st.busy_flame, Unit::Ns, false);
        }
        None => {
            let title = format!(
                "Launches per stack (GPU busy time unknown: no measured or calibrated kernel durations): {} launches{}",
                st.launches,
                no_stack(st.launches_without_stack, st.launches, &|n| n.to_string())
            );
            svg(out, "flame-busy", &title, &st.busy_flame, Unit::Launches, false);
        }
    }
    let c = &st.by_idle;
    let title = format!(
        "GPU idle time per stack: {} in {} gaps{}{}; the top frames are the causes",
        fmt_ns(c.total_ns),
        c.gaps,
        if st.busy_basis == "unknown" { " (certain gaps only, a lower bound)" } else { "" },
        no_stack(c.without_stack_ns, c.total_ns, &|n| fmt_ns(n))
    );
    svg(out, "flame-idle", &title, &st.idle_flame, Unit::Ns, true);
    out.push_str("<p class=note>Each box is a frame, as wide as its share of the graph's time; its callers are below it. Where a launching thread was: its stack at the launch that ended the gap (on CPU) or at its switch-out (blocked, preempted).</p>\n");
}

/// A bar chart (SVG) of a log-scale gap histogram: gaps per bucket.
fn histogram_svg(out: &mut String, title: &str, h: &[Bucket]) {
    let h: Vec<&Bucket> = h.iter().collect();
    let first = h.iter().position(|b| b.count > 0);
    let last = h.iter().rposition(|b| b.count > 0);
    let (Some(a), Some(b)) = (first, last) else {
        return;
    };
    let h = &h[a..=b];
    let max = h.iter().map(|b| b.count).max().unwrap_or(1).max(1) as f64;
    let (bw, hh, top, left) = (76.0, 160.0, 24.0, 48.0);
    let w = left + bw * h.len() as f64 + 10.0;
    let _ = write!(
        out,
        "<figure><svg class=hist width=\"{w}\" height=\"{}\" viewBox=\"0 0 {w} {}\" role=img><title>{}</title>",
        hh + top + 48.0,
        hh + top + 48.0,
        esc(title)
    );
    let _ = write!(out, "<text x=\"{left}\" y=\"14\" class=ax>{}</text>", esc(title));
    for (i, b) in h.iter().enumerate() {
        let x = left + bw * i as f64;
        let y = top + hh * (1.0 - b.count as f64 / max);
        let _ = write!(
            out,
            "<rect class=bar x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>{} gaps, {} in all</title></rect>",
            x + 4.0,
            bw - 8.0,
            top + hh - y,
            b.count,
            fmt_ns(b.total_ns)
        );
        let _ = write!(out, "<text x=\"{:.1}\" y=\"{:.1}\" class=num>{}</text>", x + bw / 2.0, y - 3.0, b.count);
        let label = match b.hi_ns {
            Some(_) => format!("≥{}", fmt_ns(b.lo_ns)),
            None => format!("≥{}", fmt_ns(b.lo_ns)),
        };
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" class=tick>{}</text>",
            x + bw / 2.0,
            top + hh + 16.0,
            esc(&label)
        );
    }
    let _ = write!(
        out,
        "<text x=\"{left}\" y=\"{:.1}\" class=ax>gap length (bucket's lower edge); bar: number of gaps</text>",
        top + hh + 38.0
    );
    out.push_str("</svg></figure>\n");
}

/// Power per GPU over the trace (SVG lines, at most 1,500 points each).
fn power_svg(out: &mut String, t: &Trace, span: (u64, u64)) -> bool {
    let mut by_gpu: BTreeMap<u32, Vec<(u64, f64)>> = BTreeMap::new();
    for p in &t.power {
        if let Some(mw) = p.power_mw {
            by_gpu.entry(p.gpu).or_default().push((p.ts, mw as f64 / 1000.0));
        }
    }
    if by_gpu.is_empty() {
        return false;
    }
    let maxw = by_gpu.values().flatten().map(|x| x.1).fold(1.0, f64::max);
    let (w, h, left, top) = (960.0, 180.0, 56.0, 16.0);
    let dur = (span.1 - span.0).max(1) as f64;
    let _ = write!(
        out,
        "<figure><svg class=power width=\"{}\" height=\"{}\" role=img><title>GPU power</title>",
        w + left + 10.0,
        h + top + 40.0
    );
    let _ = write!(
        out,
        "<text x=\"4\" y=\"{:.1}\" class=ax>{maxw:.0} W</text><text x=\"4\" y=\"{:.1}\" class=ax>0 W</text>",
        top + 10.0,
        top + h
    );
    let colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
    for (gi, (gpu, pts)) in by_gpu.iter_mut().enumerate() {
        pts.sort_by_key(|x| x.0);
        let step = pts.len().div_ceil(1500).max(1);
        let mut d = String::new();
        for (i, (ts, wv)) in pts.iter().step_by(step).enumerate() {
            let x = left + w * (ts.saturating_sub(span.0)) as f64 / dur;
            let y = top + h * (1.0 - wv / maxw);
            let _ = write!(d, "{}{x:.1},{y:.1}", if i == 0 { "M" } else { " L" });
        }
        let c = colors[gi % colors.len()];
        let _ =
            write!(out, "<path d=\"{d}\" fill=none stroke=\"{c}\" stroke-width=1.2><title>GPU {gpu}</title></path>");
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{c}\" class=ax>GPU {gpu}</text>",
            left + 10.0 + 70.0 * gi as f64,
            top + h + 34.0
        );
    }
    let _ = write!(
        out,
        "<text x=\"{left}\" y=\"{:.1}\" class=ax>0 s</text><text x=\"{:.1}\" y=\"{:.1}\" class=ax text-anchor=end>{}</text>",
        top + h + 16.0,
        left + w,
        top + h + 16.0,
        esc(&fmt_ns(span.1 - span.0))
    );
    out.push_str("</svg></figure>\n");
    true
}

/// ioctls per escape/control name: count, time, failed (the 15 most frequent).
fn ioctl_table(out: &mut String, t: &Trace) -> bool {
    let mut m: HashMap<u32, (u64, u64, u64)> = HashMap::new();
    for i in t.ioctls.iter().filter(|i| !i.file_op) {
        let e = m.entry(i.name).or_default();
        e.0 += 1;
        e.1 += i.dur;
        e.2 += i.failed as u64;
    }
    if m.is_empty() {
        return false;
    }
    let total: u64 = m.values().map(|x| x.0).sum();
    let mut v: Vec<(u32, (u64, u64, u64))> = m.into_iter().collect();
    v.sort_by_key(|(k, x)| (std::cmp::Reverse(x.0), t.name(*k).to_string()));
    let _ = writeln!(
        out,
        "<p>{total} ioctls on NVIDIA device files; the {} most frequent (`tracer ioctls` decodes them further):</p>",
        v.len().min(15)
    );
    out.push_str("<table><tr><th>ioctl</th><th>count</th><th>time</th><th>failed</th></tr>\n");
    for (k, (n, ns, f)) in v.iter().take(15) {
        let _ = writeln!(
            out,
            "<tr><td class=l>{}</td><td>{n}</td><td>{}</td><td>{f}</td></tr>",
            esc(t.name(*k)),
            fmt_ns(*ns)
        );
    }
    out.push_str("</table>\n");
    true
}

fn verdict_html(out: &mut String, v: &Verdict) {
    let _ = writeln!(
        out,
        "<p class=verdict id=verdict>Verdict: <b>{}</b>{}</p>",
        esc(v.label),
        v.phase.as_ref().map_or(String::new(), |p| format!(" (phase <b>{}</b>, the most GPU submissions)", esc(p)))
    );
    out.push_str("<table id=verdict-table><tr><th class=l>phase</th><th>time</th><th class=l>bound</th><th class=l>figures</th><th class=l>what to try</th></tr>\n");
    for p in &v.phases {
        let _ = writeln!(
            out,
            "<tr class=\"b-{:?}\"><td class=l>{}</td><td>{}</td><td class=l><b>{}</b></td><td class=l>{}</td><td class=l>{}</td></tr>",
            p.bound,
            esc(&p.phase),
            fmt_ns(p.dur_ns),
            esc(p.label),
            esc(&p.evidence),
            if p.bound == crate::analysis::verdict::Bound::Idle { String::new() } else { esc(&p.try_next) }
        );
    }
    out.push_str("</table>\n");
}

const STYLE: &str = r#"
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 24px 40px;color:#222;background:#fff}
h1{font-size:20px;margin:16px 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.meta{color:#555;margin:2px 0}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:4px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#f4f4f4} td.l,th.l{text-align:left}
.verdict{font-size:16px;background:#fff8e1;border-left:4px solid #f0a500;padding:8px 12px}
#tl-wrap{position:relative;border:1px solid #ccc;user-select:none}
#tl{display:block;width:100%;cursor:grab}
#tl-tip{position:absolute;pointer-events:none;background:#333;color:#fff;padding:3px 6px;font-size:12px;border-radius:3px;display:none;white-space:nowrap;z-index:2}
.tools button{margin-right:6px}
svg text.ax{font-size:12px;fill:#444} svg text.tick{font-size:11px;fill:#444;text-anchor:middle}
svg text.num{font-size:11px;fill:#222;text-anchor:middle} svg rect.bar{fill:#4c78a8}
svg.flame text{font-size:11px;fill:#111;pointer-events:none} svg.flame rect{stroke:#fff;stroke-width:0.5}
.note{color:#555;font-size:13px}
"#;

const SCRIPT: &str = r#"
(function(){
  var errs=[];
  window.addEventListener('error',function(e){errs.push(String(e.message));document.body.setAttribute('data-errors',String(errs.length));});
  var D=JSON.parse(document.getElementById('tl-data').textContent);
  var rows=D.rows.map(function(r){
    var n=r.d.length/3, s=new Float64Array(n), e=new Float64Array(n), k=new Int32Array(n), at=0;
    for(var i=0;i<n;i++){var a=at+r.d[3*i]; s[i]=a; e[i]=a+r.d[3*i+1]; k[i]=r.d[3*i+2]; at=e[i];}
    return {label:r.label,title:r.title,kind:r.kind,group:r.group,s:s,e:e,k:k};
  });
  var canvas=document.getElementById('tl'), ctx=canvas.getContext('2d'), tip=document.getElementById('tl-tip');
  var RH=18, TOP=22, dpr=window.devicePixelRatio||1, labelW=0;
  ctx.font='12px system-ui,sans-serif';
  rows.forEach(function(r){labelW=Math.max(labelW,ctx.measureText(r.label).width);});
  labelW=Math.ceil(labelW)+16;
  var full=[D.span[0],Math.max(D.span[1],D.span[0]+1)];
  var home=D.gpu?[D.gpu[0],Math.max(D.gpu[1],D.gpu[0]+1)]:full.slice();
  var view=home.slice();
  var colors={phase:['#b279a2','#9d755d'],cpu:['#72b7b2'],gpu:['#4c78a8']};
  function W(){return canvas.clientWidth;}
  function plotW(){return Math.max(10,W()-labelW-8);}
  function x(t){return labelW+(t-view[0])/(view[1]-view[0])*plotW();}
  function lower(a,v){var lo=0,hi=a.length;while(lo<hi){var m=(lo+hi)>>1;if(a[m]<v)lo=m+1;else hi=m;}return lo;}
  function fmt(u){var ns=u*D.unit_ns; if(ns>=1e9)return (ns/1e9).toFixed(3)+' s'; if(ns>=1e6)return (ns/1e6).toFixed(2)+' ms'; if(ns>=1e3)return (ns/1e3).toFixed(1)+' µs'; return ns.toFixed(0)+' ns';}
  function draw(){
    var w=W(), h=TOP+rows.length*RH+24;
    canvas.width=Math.round(w*dpr); canvas.height=Math.round(h*dpr); canvas.style.height=h+'px';
    ctx.setTransform(dpr,0,0,dpr,0,0); ctx.clearRect(0,0,w,h);
    ctx.font='12px system-ui,sans-serif'; ctx.textBaseline='middle';
    var drawn=0;
    rows.forEach(function(r,ri){
      var y=TOP+ri*RH;
      if(ri%2){ctx.fillStyle='#f7f7f7';ctx.fillRect(0,y,w,RH);}
      ctx.fillStyle='#222'; ctx.fillText(r.label,4,y+RH/2);
      var i=Math.max(0,lower(r.e,view[0])), n=r.s.length, cx0=-1, cx1=-1, pal=colors[r.kind]||colors.gpu, ci=0;
      ctx.fillStyle=pal[0];
      for(;i<n&&r.s[i]<=view[1];i++){
        var a=Math.max(labelW,x(r.s[i])), b=Math.min(labelW+plotW(),x(r.e[i]));
        if(b<a+1)b=a+1;
        if(r.kind==='phase'){
          ctx.fillStyle=pal[(ci++)%pal.length]; ctx.fillRect(a,y+2,b-a,RH-4);
          var nm=D.names[r.k[i]]||''; ctx.save(); ctx.beginPath(); ctx.rect(a,y,b-a,RH); ctx.clip();
          ctx.fillStyle='#fff'; ctx.fillText(nm,a+3,y+RH/2); ctx.restore(); drawn++; continue;
        }
        if(a<=cx1+0.5){if(b>cx1)cx1=b;continue;}
        if(cx1>=0){ctx.fillRect(cx0,y+3,cx1-cx0,RH-6);drawn++;}
        cx0=a;cx1=b;
      }
      if(cx1>=0){ctx.fillRect(cx0,y+3,cx1-cx0,RH-6);drawn++;}
    });
    // axis
    ctx.fillStyle='#444'; ctx.textBaseline='alphabetic';
    var span=view[1]-view[0], step=Math.pow(10,Math.floor(Math.log10(span/6)));
    if(span/step>12)step*=5; else if(span/step>6)step*=2;
    for(var t=Math.ceil(view[0]/step)*step;t<=view[1];t+=step){
      var xx=x(t); ctx.fillRect(xx,TOP-4,1,4); ctx.fillText(fmt(t-full[0]),xx+2,TOP-7);
    }
    document.getElementById('tl-view').textContent=fmt(view[0]-full[0])+' – '+fmt(view[1]-full[0])+' after the trace start ('+fmt(span)+' shown)';
    canvas.setAttribute('data-rows',String(rows.length)); canvas.setAttribute('data-drawn',String(drawn));
    document.body.setAttribute('data-timeline','drawn');
  }
  function zoom(f,at){var a=view[0],b=view[1];if(at===undefined)at=(a+b)/2;var na=at-(at-a)*f, nb=at+(b-at)*f;
    if(nb-na<10){return;} na=Math.max(full[0],na); nb=Math.min(full[1],nb); view=[na,nb]; draw();}
  canvas.addEventListener('wheel',function(ev){ev.preventDefault(); var r=canvas.getBoundingClientRect(), px=ev.clientX-r.left;
    var at=view[0]+(px-labelW)/plotW()*(view[1]-view[0]); zoom(ev.deltaY>0?1.25:0.8,at);},{passive:false});
  var drag=null;
  canvas.addEventListener('mousedown',function(ev){drag={x:ev.clientX,v:view.slice()};canvas.style.cursor='grabbing';});
  window.addEventListener('mouseup',function(){drag=null;canvas.style.cursor='grab';});
  window.addEventListener('mousemove',function(ev){
    if(drag){var d=(ev.clientX-drag.x)/plotW()*(drag.v[1]-drag.v[0]); var a=drag.v[0]-d,b=drag.v[1]-d;
      if(a<full[0]){b+=full[0]-a;a=full[0];} if(b>full[1]){a-=b-full[1];b=full[1];} view=[a,b]; draw(); return;}
    var r=canvas.getBoundingClientRect(), px=ev.clientX-r.left, py=ev.clientY-r.top;
    var ri=Math.floor((py-TOP)/RH);
    if(px<labelW||ri<0||ri>=rows.length||px>r.width){tip.style.display='none';return;}
    var row=rows[ri], t=view[0]+(px-labelW)/plotW()*(view[1]-view[0]), tol=2/plotW()*(view[1]-view[0]);
    var i=lower(row.e,t-tol);
    if(i<row.s.length&&row.s[i]<=t+tol){var nm=row.k[i]>=0?D.names[row.k[i]]:(row.kind==='cpu'?'CUDA calls':'several intervals merged');
      tip.textContent=nm+' · '+fmt(row.e[i]-row.s[i])+' at '+fmt(row.s[i]-full[0]);
      tip.style.left=(px+12)+'px'; tip.style.top=(py+12)+'px'; tip.style.display='block';}
    else tip.style.display='none';
  });
  canvas.addEventListener('dblclick',function(){view=home.slice();draw();});
  document.getElementById('zin').onclick=function(){zoom(0.5);};
  document.getElementById('zout').onclick=function(){zoom(2);};
  document.getElementById('zgpu').onclick=function(){view=home.slice();draw();};
  document.getElementById('zall').onclick=function(){view=full.slice();draw();};
  window.addEventListener('resize',draw);
  draw();
})();
"#;

/// The page. `gaps`: `tracer gaps`' report on the same timeline (its GPU
/// scopes give the histograms).
pub fn render(t: &Trace, r: &Report, tl: &Timeline, verdict: Option<&Verdict>, gaps: Option<&GapReport>) -> String {
    let style = r.names;
    let mut names =
        Names { list: Vec::new(), ids: HashMap::new(), kernels: HashMap::new(), style, short: ShortNames::of_trace(t) };
    let mut rows = rows(t, r, tl, &mut names);
    let merged_gap = fit(&mut rows);
    let span = t.span().unwrap_or((0, 1));
    let gpu_window = {
        let mut lo = u64::MAX;
        let mut hi = 0;
        for s in &tl.streams {
            if let (Some(f), Some(l)) = (s.intervals.first(), s.intervals.last()) {
                lo = lo.min(f.start);
                hi = hi.max(l.end);
            }
        }
        (lo < hi).then_some((lo, hi))
    };
    let bound = !r.idle_basis.share_known();
    let mut o = String::with_capacity(1 << 20);
    let title = format!("tracer report: {}", r.trace);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><meta name=viewport content=\"width=device-width\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    );
    if let Some(c) = &r.command {
        let _ = writeln!(o, "<p class=meta>command: <code>{}</code></p>", esc(c));
    }
    let _ = writeln!(
        o,
        "<p class=meta>trace over {}; GPU: {}; GPU timeline: {}; busy/idle: {}</p>",
        fmt_ns(r.span_ns),
        esc(r.gpu.as_deref().unwrap_or("unknown (not in the trace's header)")),
        tl.source.as_str(),
        esc(&crate::analysis::basis::label(tl))
    );
    o.push_str("<h2 id=what-bounds>What bounds the run</h2>\n");
    match verdict {
        Some(v) => verdict_html(&mut o, v),
        None => o.push_str("<p>No phases (no process with GPU work): no verdict.</p>\n"),
    }
    o.push_str("<h2 id=phases>Phases and iterations</h2>\n");
    period_table(&mut o, "phase", &r.phases, false, bound);
    period_table(&mut o, "iteration", &r.iterations, true, bound);
    if bound {
        o.push_str("<p class=note>idle ≥: certain idle time (after a synchronization returned, before the next submission), a lower bound: the trace has no kernel durations.</p>\n");
    }
    o.push_str("<h2 id=timeline>Timeline</h2>\n<p class=tools><button id=zin>zoom in</button><button id=zout>zoom out</button><button id=zgpu>GPU work</button><button id=zall>whole trace</button> <span id=tl-view></span></p>\n");
    o.push_str("<p class=note>Wheel: zoom at the pointer; drag: pan; double-click: back to the GPU work. It opens on the span of GPU work (start-up before it: \"whole trace\").");
    if merged_gap > 0 {
        let _ = write!(
            o,
            " Intervals of a row closer than {} are drawn merged (the page holds at most {MAX_INTERVALS} intervals).",
            fmt_ns(merged_gap)
        );
    }
    o.push_str("</p>\n<div id=tl-wrap><canvas id=tl height=100></canvas><div id=tl-tip></div></div>\n");
    let _ = writeln!(
        o,
        "<script type=\"application/json\" id=tl-data>{}</script>",
        timeline_data(span.0, span, gpu_window, &rows, &names, merged_gap)
    );
    o.push_str("<h2 id=kernels>Top kernels</h2>\n");
    kernel_table(&mut o, "by GPU time", &r.top_by_gpu_time, style);
    kernel_table(&mut o, "by launches", &r.top_by_count, style);
    o.push_str("<h2 id=gaps>Idle gaps</h2>\n");
    let mut any = false;
    for s in gaps.map_or(&[][..], |g| &g.scopes[..]).iter().filter(|s| s.kind == "gpu") {
        let o2 = &s.overall;
        histogram_svg(
            &mut o,
            &format!(
                "{}: {} gaps, {} idle{} in a window of {}",
                s.scope,
                o2.count,
                fmt_ns(o2.idle_ns),
                if bound { " (certain, a lower bound)" } else { "" },
                fmt_ns(o2.window_ns)
            ),
            &o2.histogram,
        );
        any = true;
    }
    if !any {
        o.push_str("<p>No GPU idle gaps (no GPU work).</p>\n");
    }
    o.push_str("<h2 id=stacks>Stacks</h2>\n");
    match &r.stacks {
        Some(st) => stacks_html(&mut o, st),
        None => o.push_str(
            "<p class=note>No stacks in the trace (recorded with <code>--no-stacks</code>, or by a tracer before stacks).</p>\n",
        ),
    }
    o.push_str("<h2 id=energy>Energy</h2>\n");
    match &r.energy_total {
        Some(e) => {
            let _ = writeln!(o, "<p>Energy over the trace: <b>{}</b> ({}).</p>", esc(&energy_text(e)), e.method);
        }
        None => o.push_str("<p>No energy figure.</p>\n"),
    }
    if !power_svg(&mut o, t, span) {
        let why = r
            .notes
            .iter()
            .find(|n| n.starts_with("no power samples"))
            .cloned()
            .unwrap_or_else(|| "no power samples".into());
        let _ = writeln!(o, "<p class=note>{}</p>", esc(&why));
    }
    o.push_str("<h2 id=ioctls>ioctls</h2>\n");
    if !ioctl_table(&mut o, t) {
        o.push_str("<p class=note>No ioctls recorded (record with <code>tracer --ioctls</code>).</p>\n");
    }
    o.push_str("<h2 id=gpus>Per GPU and per process</h2>\n");
    if !r.per_gpu.is_empty() {
        o.push_str("<table><tr><th>GPU (process)</th><th>time</th><th>launches</th>");
        let _ = writeln!(
            o,
            "<th>{}</th><th>{}</th><th>energy</th></tr>",
            if bound { "idle ≥" } else { "GPU busy" },
            if bound { "idle % ≥" } else { "idle %" }
        );
        for g in &r.per_gpu {
            let name = match g.pid {
                None => format!("GPU {}", g.device),
                Some(p) => {
                    format!("· pid {p} {}", r.processes.iter().find(|(q, _)| *q == p).map_or("", |(_, n)| n.as_str()))
                }
            };
            let _ = writeln!(
                o,
                "<tr><td class=l>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&name),
                fmt_ns(g.end - g.start),
                g.launches,
                g.busy_ns.or(g.idle_lower_bound_ns).map_or("-".into(), fmt_ns),
                g.idle_share.or(g.idle_share_lower_bound).map_or("-".into(), |x| format!("{:.1}", 100.0 * x)),
                g.energy.as_ref().filter(|_| g.pid.is_none()).map_or(String::new(), |e| esc(&energy_text(e)))
            );
        }
        o.push_str("</table>\n");
    }
    period_table(&mut o, "process", &r.per_process, false, bound);
    if r.per_gpu.is_empty() && r.per_process.is_empty() {
        let _ = writeln!(
            o,
            "<p>One GPU and one process: {} ({}).</p>",
            esc(&r.processes.iter().map(|(p, n)| format!("{p} {n}")).collect::<Vec<_>>().join(", ")),
            esc(r.gpu.as_deref().unwrap_or("GPU unknown"))
        );
    }
    let legend = crate::analysis::report::energy_legend(r);
    if !r.notes.is_empty() || !legend.is_empty() {
        o.push_str("<h2 id=notes>Notes</h2>\n<ul>\n");
        for n in legend.iter().chain(&r.notes) {
            let _ = writeln!(o, "<li>{}</li>", esc(n));
        }
        o.push_str("</ul>\n");
    }
    let _ = write!(o, "<script>{}{SCRIPT}</script>\n</body></html>\n", flame_svg::SCRIPT);
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_and_escaping() {
        let iv = vec![(0, 10, 1), (12, 20, 2), (100, 110, 3)];
        assert_eq!(merged(&iv, 5), vec![(0, 20, -1), (100, 110, 3)]);
        assert_eq!(normalized(vec![(5, 8, 1), (0, 6, 2), (20, 30, 3)]), vec![(0, 8, -1), (20, 30, 3)]);
        assert_eq!(esc("a<b>&\"c\""), "a&lt;b&gt;&amp;&quot;c&quot;");
        assert_eq!(js_str("</script>"), "\"<\\/script>\"");
    }

    /// 400,000 intervals 1 µs long, 1 µs apart: more than the page holds;
    /// the smallest power of two of 100 ns above 1 µs (1.6 µs) is the first
    /// gap under which they fit (here: all chained into one span).
    #[test]
    fn too_many_intervals_are_merged_to_fit() {
        let iv: Vec<(u64, u64, i64)> = (0..400_000u64).map(|i| (i * 2_000, i * 2_000 + 1_000, 0)).collect();
        let mut rows = vec![Row { group: "g".into(), label: "r".into(), title: String::new(), kind: "gpu", iv }];
        let gap = fit(&mut rows);
        assert_eq!(gap, 1_600);
        assert_eq!(rows[0].iv.len(), 1);
        let mut rows = vec![Row {
            group: "g".into(),
            label: "r".into(),
            title: String::new(),
            kind: "gpu",
            iv: (0..1_000u64).map(|i| (i * 10, i * 10 + 5, 0)).collect(),
        }];
        assert_eq!(fit(&mut rows), 0);
        assert_eq!(rows[0].iv.len(), 1_000);
    }
}
