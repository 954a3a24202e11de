//! Parse-level checks of the OpenMetrics text: a strict reader of the
//! format's text (metric descriptors, samples, label escaping, `# EOF`)
//! reads back exactly what was rendered.
use super::*;
use crate::analysis::agent::metric::{Family, Histogram, Kind};
use crate::analysis::agent::{AgentMetrics, Options, snapshot};

type Labels = Vec<(String, String)>;

#[derive(Debug, PartialEq)]
struct Parsed {
    /// (family, type, help)
    families: Vec<(String, String, String)>,
    /// (sample name, labels, value)
    samples: Vec<(String, Labels, f64)>,
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
}

/// The label set `{a="x",b="y"}` at the start of `s`; returns it and the rest.
fn parse_labels(s: &str) -> Result<(Labels, &str), String> {
    let mut out = Vec::new();
    let mut rest = s.strip_prefix('{').ok_or("no {")?;
    if let Some(r) = rest.strip_prefix('}') {
        return Ok((out, r));
    }
    loop {
        let eq = rest.find('=').ok_or("label without =")?;
        let name = &rest[..eq];
        if !is_name(name) {
            return Err(format!("bad label name {name:?}"));
        }
        if out.iter().any(|(n, _)| n == name) {
            return Err(format!("label {name} twice"));
        }
        rest = rest[eq + 1..].strip_prefix('"').ok_or("label value not quoted")?;
        let mut val = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next().ok_or("unterminated label value")? {
                (_, '\\') => match chars.next().ok_or("dangling escape")?.1 {
                    '\\' => val.push('\\'),
                    '"' => val.push('"'),
                    'n' => val.push('\n'),
                    c => return Err(format!("bad escape \\{c}")),
                },
                (_, '\n') => return Err("raw newline in a label value".into()),
                (i, '"') => break i,
                (_, c) => val.push(c),
            }
        };
        out.push((name.to_string(), val));
        rest = &rest[end + 1..];
        if let Some(r) = rest.strip_prefix('}') {
            return Ok((out, r));
        }
        rest = rest.strip_prefix(',').ok_or("labels not separated by ,")?;
    }
}

fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => s.parse::<f64>().map_err(|e| format!("value {s:?}: {e}")),
    }
}

/// A strict reader: every line a descriptor or a sample of the current
/// family (with the suffixes its type allows), each family once, `# EOF`
/// last and only there.
fn parse(text: &str) -> Result<Parsed, String> {
    let body = text.strip_suffix("# EOF\n").ok_or("does not end with # EOF")?;
    let mut p = Parsed { families: vec![], samples: vec![] };
    for (i, line) in body.lines().enumerate() {
        let err = |e: String| format!("line {}: {e}: {line:?}", i + 1);
        if let Some(d) = line.strip_prefix("# ") {
            let mut parts = d.splitn(3, ' ');
            let (kw, name, rest) = (parts.next().unwrap(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            if !is_name(name) {
                return Err(err("bad family name".into()));
            }
            match kw {
                "TYPE" => {
                    if !["counter", "gauge", "histogram"].contains(&rest) {
                        return Err(err(format!("type {rest}")));
                    }
                    if p.families.iter().any(|f| f.0 == name) {
                        return Err(err("family twice".into()));
                    }
                    p.families.push((name.into(), rest.into(), String::new()));
                }
                "HELP" => {
                    let f =
                        p.families.last_mut().filter(|f| f.0 == name).ok_or_else(|| err("HELP before TYPE".into()))?;
                    f.2 = rest.into();
                }
                _ => return Err(err("unknown descriptor".into())),
            }
            continue;
        }
        let (fam, ty, _) = p.families.last().ok_or_else(|| err("sample before any TYPE".into()))?;
        let name_end = line.find(['{', ' ']).ok_or_else(|| err("no value".into()))?;
        let name = &line[..name_end];
        let suffixes: &[&str] = match ty.as_str() {
            "counter" => &["_total", "_created"],
            "histogram" => &["_bucket", "_count", "_sum", "_created"],
            _ => &[""],
        };
        if !suffixes.iter().any(|s| name.strip_suffix(s) == Some(fam.as_str())) {
            return Err(err(format!("sample {name} in family {fam} ({ty})")));
        }
        let (labels, rest) = if line[name_end..].starts_with('{') {
            parse_labels(&line[name_end..]).map_err(err)?
        } else {
            (vec![], &line[name_end..])
        };
        let v = rest.strip_prefix(' ').ok_or_else(|| err("no space before the value".into()))?;
        if name.ends_with("_bucket") && !labels.iter().any(|(k, _)| k == "le") {
            return Err(err("bucket without le".into()));
        }
        p.samples.push((name.into(), labels, parse_value(v).map_err(err)?));
    }
    Ok(p)
}

fn family(kind: Kind) -> Family {
    let mut f = Family::new("t_x", kind, "Help with a \\ backslash\nand a newline.");
    f.push(vec![("command", "py \"quoted\" \\ path\nnext".into()), ("pid", "7".into())], 3.0);
    f
}

#[test]
fn counters_get_total_and_escaped_labels_read_back() {
    let text = render(&[family(Kind::Counter)]);
    assert_eq!(
        text,
        "# TYPE t_x counter\n# HELP t_x Help with a \\\\ backslash\\nand a newline.\n\
         t_x_total{command=\"py \\\"quoted\\\" \\\\ path\\nnext\",pid=\"7\"} 3\n# EOF\n"
    );
    let p = parse(&text).unwrap();
    assert_eq!(p.samples[0].1[0].1, "py \"quoted\" \\ path\nnext");
    assert_eq!(p.samples[0].2, 3.0);
}

#[test]
fn gauges_and_fractions() {
    let mut f = Family::new("t_g", Kind::Gauge, "g");
    f.push(vec![], 0.25);
    f.push(vec![("a", "".into())], 1e20);
    let text = render(&[f]);
    assert_eq!(text, "# TYPE t_g gauge\n# HELP t_g g\nt_g 0.25\nt_g{a=\"\"} 100000000000000000000\n# EOF\n");
    assert_eq!(parse(&text).unwrap().samples.len(), 2);
}

#[test]
fn histograms_have_cumulative_buckets_count_and_sum() {
    let mut f = Family::new("t_h", Kind::Histogram, "h");
    f.push_histogram(
        vec![("pid", "1".into())],
        Histogram { buckets: vec![(0.001, 1), (1.0, 3), (f64::INFINITY, 4)], sum: 2.5, count: 4 },
    );
    let text = render(&[f]);
    let p = parse(&text).unwrap();
    let names: Vec<&str> = p.samples.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(names, ["t_h_bucket", "t_h_bucket", "t_h_bucket", "t_h_count", "t_h_sum"]);
    assert_eq!(p.samples[2].1, vec![("pid".to_string(), "1".to_string()), ("le".into(), "+Inf".into())]);
    assert_eq!(p.samples[0].1[1].1, "0.001");
    assert_eq!((p.samples[3].2, p.samples[4].2), (4.0, 2.5));
}

#[test]
fn the_strict_reader_refuses_what_is_not_openmetrics() {
    assert!(parse("# TYPE a counter\na_total 1\n").is_err(), "no # EOF");
    assert!(parse("# TYPE a counter\na 1\n# EOF\n").is_err(), "counter sample without _total");
    assert!(parse("# TYPE a gauge\na{x=\"\\q\"} 1\n# EOF\n").is_err(), "bad escape");
    assert!(parse("# TYPE a gauge\n# TYPE a gauge\n# EOF\n").is_err(), "family twice");
    assert!(parse("# TYPE a gauge\na{x=\"1\",x=\"2\"} 1\n# EOF\n").is_err(), "label twice");
    assert!(parse("a 1\n# EOF\n").is_err(), "sample without TYPE");
}

/// The agent's whole exposition, with a process whose command needs
/// escaping, parses; every family has TYPE and HELP; the launch counter
/// reads back.
#[test]
fn the_agent_exposition_is_valid() {
    let mut m = AgentMetrics::new(Options::default());
    let lines = [
        r#"{"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"gemm","pid":5,"ts":10,"stream":"0x0"}"#,
        r#"{"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"gemm","pid":5,"ts":20,"stream":"0x0"}"#,
        r#"{"type":"sync","op":"ctx_synchronize","name":"cuCtxSynchronize","pid":5,"ts":30,"duration_us":2.0,"ret":0}"#,
        r#"{"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"gemm","pid":5,"ts":3000000,"stream":"0x0"}"#,
        r#"{"type":"sync","op":"stream_synchronize","name":"cuStreamSynchronize","pid":5,"ts":3000010,"duration_us":1.0,"ret":0,"stream":"0x0"}"#,
        r#"{"type":"memory","op":"alloc","name":"cuMemAlloc_v2","pid":5,"ts":40,"size":4096,"ptr":"0x7f00","ret":0,"error":"CUDA_ERROR_OUT_OF_MEMORY"}"#,
    ];
    for l in lines {
        m.add_value(&serde_json::from_str(l).unwrap(), 0);
    }
    m.set_info(5, Some("python3 \"a\\b\"".into()), None, true);
    m.health.power_unavailable = Some("NVML: libnvidia-ml.so.1 not found".into());
    let text = render(&snapshot::families(&m));
    let p = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(p.families.iter().all(|f| !f.2.is_empty()), "every family has HELP");
    let launches: Vec<_> = p.samples.iter().filter(|s| s.0 == "tracer_kernel_launches_total").collect();
    assert_eq!(launches.len(), 1);
    assert_eq!(launches[0].2, 3.0);
    assert!(launches[0].1.contains(&("command".into(), "python3 \"a\\b\"".into())));
    let errors: Vec<_> = p.samples.iter().filter(|s| s.0 == "tracer_cuda_errors_total").collect();
    assert_eq!(errors[0].1.last().unwrap(), &("error".to_string(), "CUDA_ERROR_OUT_OF_MEMORY".to_string()));
    // One gap (2030 ns to 3 ms) between the two busy stretches.
    let count = p.samples.iter().find(|s| s.0 == "tracer_gpu_idle_gap_seconds_count").unwrap();
    assert_eq!(count.2, 1.0);
    let busy = p.samples.iter().find(|s| s.0 == "tracer_gpu_busy_seconds_total").unwrap();
    // 10 ns to the context sync's return at 2030, 3 ms to 3001010.
    assert_eq!(busy.2, (2020.0 + 1010.0) / 1e9);
    let power = p.samples.iter().find(|s| s.0 == "tracer_power_available").unwrap();
    assert_eq!((power.1[0].1.as_str(), power.2), ("NVML: libnvidia-ml.so.1 not found", 0.0));
}

/// `sched` lines: the off-CPU time of each process by cause, counted from
/// the off_cpu lines only (a blocked interval split at its wake-up), never
/// as driver calls; process labels without `gpu`.
#[test]
fn off_cpu_seconds_by_cause() {
    let mut m = AgentMetrics::new(Options::default());
    let ms = 1_000_000u64;
    let lines = [
        r#"{"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"gemm","pid":5,"ts":10,"stream":"0x0"}"#
            .to_string(),
        r#"{"type":"sched","op":"thread_seen","name":"thread_seen","pid":5,"tid":5,"ts":10}"#.into(),
        // 80 ms asleep, woken 30 µs before it ran
        format!(
            r#"{{"type":"sched","op":"off_cpu","name":"clock_nanosleep","state":"blocked","syscall":"clock_nanosleep","pid":5,"tid":5,"ts":{},"end_ts":{},"runnable_ns":30000}}"#,
            ms,
            81 * ms
        ),
        // 80 ms reading a pipe (woken 1 ms before it ran), on another thread
        format!(
            r#"{{"type":"sched","op":"off_cpu","name":"read","state":"blocked","syscall":"read","file":"pipe","pid":5,"tid":6,"ts":{},"end_ts":{},"runnable_ns":{}}}"#,
            ms,
            81 * ms,
            ms
        ),
        format!(
            r#"{{"type":"sched","op":"off_cpu","name":"recvmsg","state":"blocked","syscall":"recvmsg","pid":5,"tid":6,"ts":{},"end_ts":{}}}"#,
            90 * ms,
            92 * ms
        ),
        format!(
            r#"{{"type":"sched","op":"off_cpu","name":"membarrier","state":"blocked","syscall":"membarrier","pid":5,"tid":6,"ts":{},"end_ts":{}}}"#,
            93 * ms,
            94 * ms
        ),
        format!(
            r#"{{"type":"sched","op":"off_cpu","name":"page_fault","state":"blocked","pid":5,"tid":5,"ts":{},"end_ts":{},"runnable_ns":0}}"#,
            95 * ms,
            98 * ms
        ),
        // 40 ms preempted
        format!(
            r#"{{"type":"sched","op":"off_cpu","name":"runnable","state":"runnable","preempted":true,"pid":5,"tid":5,"ts":{},"end_ts":{},"runnable_ns":{}}}"#,
            100 * ms,
            140 * ms,
            40 * ms
        ),
        format!(
            r#"{{"type":"sched","op":"off_cpu","name":"unknown","state":"unknown","pid":5,"tid":5,"ts":{},"end_ts":{}}}"#,
            150 * ms,
            155 * ms
        ),
        format!(
            r#"{{"type":"sched","op":"lost","name":"lost","pid":0,"tid":0,"ts":{},"end_ts":{},"cpu":1,"records":3}}"#,
            150 * ms,
            151 * ms
        ),
        // another process: only sched lines, the series still appear
        format!(
            r#"{{"type":"sched","op":"off_cpu","name":"futex","state":"blocked","syscall":"futex","pid":8,"tid":8,"ts":{},"end_ts":{},"runnable_ns":0}}"#,
            ms,
            3 * ms
        ),
    ];
    for l in &lines {
        m.add_value(&serde_json::from_str(l).unwrap(), 0);
    }
    m.set_info(5, Some("python3".into()), Some("/a".into()), true);
    let text = render(&snapshot::families(&m));
    let p = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let off: Vec<(String, String, f64)> = p
        .samples
        .iter()
        .filter(|s| s.0 == "tracer_off_cpu_seconds_total")
        .map(|s| {
            let keys: Vec<&str> = s.1.iter().map(|l| l.0.as_str()).collect();
            assert_eq!(keys, ["pid", "command", "cgroup", "cause"], "{s:?}");
            (s.1[0].1.clone(), s.1[3].1.clone(), (s.2 * 1e9).round())
        })
        .collect();
    let row = |pid: &str, c: &str, ns: u64| (pid.to_string(), c.to_string(), ns as f64);
    assert_eq!(
        off,
        vec![
            row("5", "blocked_read", 79 * ms),
            row("5", "blocked_recv", 2 * ms),
            row("5", "blocked_clock_nanosleep", 80 * ms - 30_000),
            row("5", "blocked_other", ms),
            row("5", "page_fault", 3 * ms),
            row("5", "runnable", 41 * ms + 30_000),
            row("5", "unknown", 5 * ms),
            row("8", "blocked_futex", 2 * ms),
        ]
    );
    let pid5 = p.samples.iter().find(|s| s.0 == "tracer_off_cpu_seconds_total").unwrap();
    assert!(pid5.1.contains(&("command".into(), "python3".into())) && pid5.1.contains(&("cgroup".into(), "/a".into())));
    // the sched lines are no driver calls
    let calls: Vec<_> = p.samples.iter().filter(|s| s.0 == "tracer_driver_calls_total").collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].1.last().unwrap(), &("api".to_string(), "cuLaunchKernel".to_string()));
    // under --duty-cycle the calls are sampled, the off-CPU time is not
    m.sample(0.1);
    let p = parse(&render(&snapshot::families(&m))).unwrap();
    let keys = |name: &str| -> Vec<String> {
        p.samples.iter().find(|s| s.0 == name).unwrap().1.iter().map(|l| l.0.clone()).collect()
    };
    assert_eq!(keys("tracer_off_cpu_seconds_total"), ["pid", "command", "cgroup", "cause"]);
    assert_eq!(keys("tracer_driver_calls_total"), ["pid", "command", "cgroup", "gpu", "sampled", "api"]);
}
