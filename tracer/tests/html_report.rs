//! `tracer report TRACE --html FILE` opened in a real browser: Debian's
//! chromium, headless (`cargo xtask setup` installs it). The page loads
//! without a console message or script error, the timeline is drawn (the
//! canvas's rows and drawn spans, set by the page's script after it drew),
//! every section is there, and the file references nothing on the network.
use std::path::{Path, PathBuf};
use std::process::Command;

mod command;
use command::tracer;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracer-html-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn chromium() -> &'static str {
    let ok = Command::new("chromium").arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(ok, "chromium missing: run `cargo xtask setup` (installs Debian's chromium)");
    "chromium"
}

/// The DOM after the page's scripts ran, and chromium's console lines.
fn open(page: &Path) -> (String, Vec<String>) {
    let profile = tmp(&format!("profile-{}", page.file_name().unwrap().to_string_lossy()));
    let o = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--window-size=1600,1200",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "chromium: {}", String::from_utf8_lossy(&o.stderr));
    let console =
        String::from_utf8_lossy(&o.stderr).lines().filter(|l| l.contains(":CONSOLE")).map(String::from).collect();
    (String::from_utf8_lossy(&o.stdout).into_owned(), console)
}

/// The value of attribute `name` in the first tag that starts with `tag`.
fn attr(dom: &str, tag: &str, name: &str) -> Option<String> {
    let at = dom.find(tag)?;
    let end = at + dom[at..].find('>')?;
    let t = &dom[at..end];
    let i = t.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(t[i..i + t[i..].find('"')?].to_string())
}

fn write_page(rel: &str, name: &str) -> (PathBuf, String) {
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    let out = tmp(name);
    let (rc, _, err) = tracer(&["report", trace.to_str().unwrap(), "--html", out.to_str().unwrap(), "--force"]);
    assert_eq!(rc, 0, "{err}");
    assert!(err.contains(&format!("wrote {}", out.display())), "{err}");
    let html = std::fs::read_to_string(&out).unwrap();
    (out, html)
}

fn self_contained(html: &str) {
    for bad in ["http://", "https://", "<link", " src=", "@import", "url("] {
        assert!(!html.contains(bad), "the page references {bad:?}");
    }
}

#[test]
fn html_report_loads_and_draws_its_timeline() {
    let (page, html) = write_page("traces/transformer_inference_full.jsonl.gz", "full.html");
    self_contained(&html);
    for id in ["what-bounds", "phases", "timeline", "kernels", "gaps", "energy", "ioctls", "gpus"] {
        assert!(html.contains(&format!("<h2 id={id}>")), "section {id}");
    }
    let (dom, console) = open(&page);
    assert_eq!(console, Vec::<String>::new(), "console messages");
    assert_eq!(attr(&dom, "<body", "data-timeline").as_deref(), Some("drawn"), "{dom}");
    assert_eq!(attr(&dom, "<body", "data-errors"), None);
    // phases, the process's CUDA calls, its 2 GPU streams
    assert_eq!(attr(&dom, "<canvas id=\"tl\"", "data-rows").as_deref(), Some("4"));
    let drawn: u64 = attr(&dom, "<canvas id=\"tl\"", "data-drawn").unwrap().parse().unwrap();
    assert!(drawn >= 5, "{drawn} spans drawn");
    assert!(dom.contains("Verdict: <b>launch/host-bound</b> (phase <b>generate</b>"), "{dom}");
    // short names, the whole demangled name as the cell's title
    assert!(
        dom.contains(
            "<td class=\"l\" title=\"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel&lt;c10::Half, \
             float, false&gt;(int, float, c10::Half const*, c10::Half const*, c10::Half const*, float*, float*, \
             c10::Half*)\">vectorized_layer_norm_kernel&lt;…&gt;</td>"
        ),
        "{dom}"
    );
    // the view line, written by the script
    assert!(dom.contains(" after the trace start ("), "{dom}");
    // energy: a power picture
    assert!(dom.contains("<svg class=\"power\""), "power");
    assert!(dom.contains("<svg class=\"hist\""), "histogram");
}

#[test]
fn two_gpu_job_has_per_gpu_sections_and_ranks() {
    let (page, html) = write_page("docs/multi-gpu/tp.jsonl.zst", "tp.html");
    self_contained(&html);
    assert!(html.len() < 20_000_000, "{} bytes", html.len());
    let (dom, console) = open(&page);
    assert_eq!(console, Vec::<String>::new(), "console messages");
    assert_eq!(attr(&dom, "<body", "data-timeline").as_deref(), Some("drawn"));
    // phases, 3 processes' calls, 8 streams
    assert_eq!(attr(&dom, "<canvas id=\"tl\"", "data-rows").as_deref(), Some("12"));
    assert!(dom.contains("<td class=\"l\">GPU 1</td>"), "per-GPU table");
    assert!(dom.contains("<th>rank</th>"), "rank column");
    assert!(dom.contains("Verdict: <b>undetermined</b>"));
    // part-sampled energy is marked and the mark explained
    assert!(dom.contains("≥ 6192.44 J (99.9% sampled)"), "energy cell");
    assert!(
        dom.contains("<li>energy \"≥ X J (N% sampled)\": the NVML samples cover only that share of the period"),
        "{dom}"
    );
    // two histograms, one per GPU
    assert_eq!(dom.matches("<svg class=\"hist\"").count(), 2);
}

/// The check itself: a page with a script error is caught.
#[test]
fn a_script_error_is_seen() {
    let p = tmp("bad.html");
    std::fs::write(&p, "<html><body><script>undefinedFunction();</script></body></html>").unwrap();
    let (_, console) = open(&p);
    assert_eq!(console.len(), 1, "{console:?}");
    assert!(console[0].contains("Uncaught ReferenceError: undefinedFunction is not defined"), "{console:?}");
}

/// The tag that contains `needle`, whole (from `<` to `>`).
fn tag_with<'a>(dom: &'a str, needle: &str) -> Option<&'a str> {
    let at = dom.find(needle)?;
    let start = dom[..at].rfind('<')?;
    Some(&dom[start..at + dom[at..].find('>')? + 1])
}

fn attr_of(tag: &str, name: &str) -> Option<String> {
    let i = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(tag[i..i + tag[i..].find('"')?].to_string())
}

/// A Python process's launches at 1, 2.5, 4 and 5 ms from train_step (twice,
/// stacks 1 and 6 differing only inside libcuda), eval and a launch without
/// a stack; measured kernels of 990, 490, 100 and 10 µs.
fn stacks_trace() -> PathBuf {
    let stack = |id: u64, addr: &str, f: &str, file: &str, line: u32| {
        format!(
            r#"{{"type":"stack","op":"stack","name":"stack","id":{id},"pid":1,"tid":0,"ts":1,"frames":[{{"kind":"native","fn":"cuLaunchKernel","module":"/usr/lib/x86_64-linux-gnu/libcuda.so.1","addr":"{addr}","offset":"0x10"}},{{"kind":"python","fn":"{f}","file":"/w/{file}","line":{line}}},{{"kind":"python","fn":"main","file":"/w/train.py","line":90}}]}}"#
        )
    };
    let mut l = vec![
        r#"{"type":"header","pid":1,"command":["python3","train.py"],"stacks":true}"#.to_string(),
        stack(1, "0x7f0000001000", "train_step", "train.py", 60),
        stack(6, "0x7f0000002000", "train_step", "train.py", 60),
        stack(5, "0x7f0000001000", "eval", "eval.py", 10),
    ];
    for (ts, st, len) in [
        (1_000_000u64, Some(1), 990_000u64),
        (2_500_000, Some(6), 490_000),
        (4_000_000, Some(5), 100_000),
        (5_000_000, None, 10_000),
    ] {
        let s = st.map_or(String::new(), |s| format!(r#","stack":{s}"#));
        l.push(format!(r#"{{"ts":{ts},"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","grid":[1,1,1],"block":[1,1,1],"stream":"0x0","ret":0{s}}}"#));
        l.push(format!(
            r#"{{"ts":{},"end_ts":{},"pid":1,"tid":0,"type":"gpu","op":"kernel","name":"k","source":"cupti","device":0,"stream":"0x0","stream_id":7}}"#,
            ts + 10_000,
            ts + 10_000 + len
        ));
    }
    let p = tmp("stacks.jsonl");
    std::fs::write(&p, l.join("\n") + "\n").unwrap();
    p
}

#[test]
fn flame_graphs_of_busy_and_idle_time_per_stack() {
    let trace = stacks_trace();
    let out = tmp("stacks.html");
    let (rc, _, err) = tracer(&["report", trace.to_str().unwrap(), "--html", out.to_str().unwrap(), "--force"]);
    assert_eq!(rc, 0, "{err}");
    let html = std::fs::read_to_string(&out).unwrap();
    self_contained(&html);
    assert!(html.contains("<h2 id=stacks>Stacks</h2>"));
    let (dom, console) = open(&out);
    assert_eq!(console, Vec::<String>::new(), "console messages");
    assert_eq!(attr(&dom, "<body", "data-errors"), None);
    // busy: all, [no stack], main, eval, its libcuda frame, train_step, its libcuda frame
    let busy = tag_with(&dom, "id=\"flame-busy\"").unwrap();
    assert_eq!(attr_of(busy, "data-total").as_deref(), Some("1590000"));
    assert_eq!(attr_of(busy, "data-frames").as_deref(), Some("7"), "drawn by the page: {busy}");
    assert!(dom.contains(
        "<figcaption>GPU busy time per stack: 1.59 ms (measured) of 4 launches, 10.0 µs of 1.59 ms without a stack</figcaption>"
    ));
    // widths proportional to time (1200 px for the whole): 1.48 of 1.59 ms
    let step = tag_with(&dom, "data-name=\"train_step (train.py:60)\"").unwrap();
    assert_eq!(attr_of(step, "data-value").as_deref(), Some("1480000"));
    assert_eq!(attr_of(step, "data-px").as_deref(), Some("1117.0"), "{step}");
    let eval = tag_with(&dom, "data-name=\"eval (eval.py:10)\"").unwrap();
    assert_eq!(attr_of(eval, "data-px").as_deref(), Some("75.5"), "{eval}");
    assert!(dom.contains(">train_step (train.py:60)</text>"), "a frame's label");
    // idle: 3 gaps, 2.42 ms; eval's launch ended the 1.01 ms one
    let idle = tag_with(&dom, "id=\"flame-idle\"").unwrap();
    assert_eq!(attr_of(idle, "data-total").as_deref(), Some("2420000"));
    assert_eq!(attr_of(idle, "data-frames").as_deref(), Some("10"), "{idle}");
    assert!(dom.contains(
        "<figcaption>GPU idle time per stack: 2.42 ms in 3 gaps, 900.0 µs of 2.42 ms without a stack; the top frames are the causes</figcaption>"
    ));
    let idle_dom = &dom[dom.find("id=\"flame-idle\"").unwrap()..];
    let eval = tag_with(idle_dom, "data-name=\"eval (eval.py:10)\"").unwrap();
    assert_eq!(
        (attr_of(eval, "data-value").as_deref(), attr_of(eval, "data-px").as_deref()),
        (Some("1010000"), Some("500.8"))
    );
}
