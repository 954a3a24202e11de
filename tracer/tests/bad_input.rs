//! Bad input, one rule for every command that reads a trace: each reader
//! command runs over the same bad inputs and must answer the same way, with
//! a message naming the file, the line and the field (issue 20). Also: `-`
//! reads stdin, a cut .gz keeps its complete lines, memory of `ioctls` and
//! `image` stays bounded. A command that would read an endless input
//! forever fails as "hung" after [`HUNG`]; no verdict is a duration.
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const TRACER: &str = env!("CARGO_BIN_EXE_tracer");

/// How long a command may run before it counts as reading forever: far
/// beyond what any of these takes on a loaded machine (well under a second).
const HUNG: Duration = Duration::from_secs(120);

/// Waits for `child`'s exit and output; kills it and panics "hung" with
/// `what` when it is still running after [`HUNG`].
fn output_unless_hung(child: Child, what: &str) -> Output {
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(HUNG) {
        Ok(o) => o.unwrap(),
        Err(_) => {
            // SAFETY: kill has no memory-safety preconditions; the pid is our child's, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{what}: hung: still running after {HUNG:?}; killed it");
        }
    }
}

/// Every command that reads a trace, with its arguments (`{T}` the trace,
/// `{O}` an output folder).
const READERS: &[(&str, &[&str])] = &[
    ("summary", &["summary", "{T}"]),
    ("report", &["report", "{T}"]),
    ("gaps", &["gaps", "{T}"]),
    ("ioctls", &["ioctls", "{T}"]),
    ("export", &["export", "{T}", "-o", "{O}/t.perfetto.json"]),
    ("plot", &["plot", "{T}", "-o", "{O}", "--format", "svg"]),
    ("calibrate", &["calibrate", "{T}", "-o", "{O}/d.json"]),
    ("compare", &["compare", "{T}"]),
];

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracer-bad-input-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&str], trace: &str, out: &Path, stdin: Option<&[u8]>) -> Output {
    let args: Vec<String> =
        args.iter().map(|a| a.replace("{T}", trace).replace("{O}", &out.display().to_string())).collect();
    let mut c = Command::new(TRACER);
    c.args(&args).stdout(Stdio::piped()).stderr(Stdio::piped());
    c.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = c.spawn().unwrap();
    if let Some(b) = stdin {
        let mut w = child.stdin.take().unwrap();
        let b = b.to_vec();
        std::thread::spawn(move || {
            let _ = w.write_all(&b);
        });
    }
    output_unless_hung(child, &format!("tracer {}", args.join(" ")))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const HEADER: &str = r#"{"type":"header","format":"tracer-jsonl","format_version":1,"pid":10,"command":["x"]}"#;
const FOOTER: &str = r#"{"type":"footer","calls":3,"lost":{"total":0}}"#;

/// A small valid trace: a launch, a synchronization, an ioctl and GPU
/// activity (so that every command has something to read).
fn body() -> Vec<String> {
    [
        r#"{"ts":1000,"pid":10,"tid":10,"type":"memory","op":"alloc","name":"cuMemAlloc_v2","size":4096,"duration_us":2.0}"#,
        r#"{"ts":2000,"pid":10,"tid":10,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","grid":[1,1,1],"block":[32,1,1],"stream":"0x0"}"#,
        r#"{"ts":2500,"end_ts":4500,"duration_us":2.0,"pid":10,"tid":0,"type":"gpu","op":"kernel","name":"k","source":"cupti","device":0,"stream_id":7}"#,
        r#"{"ts":3000,"pid":10,"tid":10,"type":"ioctl","op":"ioctl","name":"RM_CONTROL","duration_us":1.5,"cuda_call":"cuLaunchKernel","fields":{"cmd_name":"X"}}"#,
        r#"{"ts":5000,"pid":10,"tid":10,"type":"sync","op":"ctx_synchronize","name":"cuCtxSynchronize","duration_us":3.0}"#,
    ]
    .map(String::from)
    .to_vec()
}

fn trace(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn whole() -> String {
    let mut v = vec![HEADER.to_string()];
    v.extend(body());
    v.push(FOOTER.into());
    trace(&v)
}

/// A bad input: its file name, content, and the message every command gives
/// (after `tracer: FILE`).
struct Case {
    name: &'static str,
    content: String,
    error: String,
}

fn cases() -> Vec<Case> {
    let with = |i: usize, l: &str| {
        let mut v = vec![HEADER.to_string()];
        v.extend(body());
        v.insert(i, l.to_string());
        v.push(FOOTER.into());
        trace(&v)
    };
    vec![
        Case {
            name: "newer.jsonl",
            content: whole().replacen("\"format_version\":1", "\"format_version\":999", 1),
            error: ": line 1: header field `format_version` = 999: written by a newer tracer (this one reads version 2); use a newer tracer".into(),
        },
        Case {
            name: "other_format.jsonl",
            content: whole().replacen("tracer-jsonl", "perf-json", 1),
            error: ": line 1: header field `format` = \"perf-json\": not a tracer trace (expected \"tracer-jsonl\")".into(),
        },
        Case {
            name: "unrelated.jsonl",
            content: "{\"name\":\"a\",\"value\":1}\n{\"name\":\"b\",\"value\":2}\n".into(),
            error: ": line 1: no `type` field (a string): not a tracer trace line".into(),
        },
        Case {
            name: "two_traces.jsonl",
            content: whole() + &whole(),
            error: ": line 8: a `header` line after the footer (line 7): two traces in one file? Read each trace on its own".into(),
        },
        Case {
            name: "two_headers.jsonl",
            content: with(3, HEADER),
            error: ": line 4: a second header (the first at line 1): two traces in one file? Read each trace on its own".into(),
        },
        Case { name: "empty.jsonl", content: String::new(), error: ": no trace lines (an empty file): not a tracer trace".into() },
        Case {
            name: "ts_2_63.jsonl",
            content: with(2, r#"{"ts":9223372036854775808,"pid":10,"tid":10,"type":"kernel","op":"launch","name":"cuLaunchKernel"}"#),
            error: ": line 3: field `ts` = 9223372036854775808 is out of range (at most 2^62 ns)".into(),
        },
        Case {
            name: "negative_size.jsonl",
            content: with(2, r#"{"ts":1500,"pid":10,"tid":10,"type":"memcpy","op":"copy","name":"cuMemcpyHtoD_v2","size":-5}"#),
            error: ": line 3: field `size`: invalid value: integer `-5`, expected u64".into(),
        },
        Case {
            name: "negative_duration.jsonl",
            content: with(2, r#"{"ts":1500,"pid":10,"tid":10,"type":"sync","op":"ctx_synchronize","name":"cuCtxSynchronize","duration_us":-1.0}"#),
            error: ": line 3: field `duration_us` = -1 is out of range (0 to 2^62 ns)".into(),
        },
        Case {
            name: "string_pid.jsonl",
            content: with(2, r#"{"ts":1500,"pid":"ten","tid":10,"type":"sync","op":"ctx_synchronize","name":"cuCtxSynchronize"}"#),
            error: ": line 3: field `pid`: invalid type: string \"ten\", expected u32".into(),
        },
        Case {
            name: "no_ts.jsonl",
            content: with(2, r#"{"pid":10,"tid":10,"type":"sync","op":"ctx_synchronize","name":"cuCtxSynchronize"}"#),
            error: ": line 3: a `sync` line needs an integer `ts` (ns)".into(),
        },
        Case {
            name: "not_json.jsonl",
            content: with(2, "{\"ts\":1500,,}"),
            error: ": line 3: not valid JSON (key must be a string at line 1 column 12)".into(),
        },
    ]
}

#[test]
fn every_reader_refuses_the_same_bad_input_with_the_same_message() {
    let d = dir("table");
    let mut failures = Vec::new();
    for case in cases() {
        let p = d.join(case.name);
        std::fs::write(&p, &case.content).unwrap();
        let want = format!("tracer: {}{}\n", p.display(), case.error);
        for (cmd, args) in READERS {
            let out = d.join(format!("out-{cmd}"));
            let o = run(args, &p.display().to_string(), &out, None);
            let (code, err) = (o.status.code(), text(&o.stderr));
            if code != Some(1) || err != want || !o.stdout.is_empty() {
                failures.push(format!("{cmd} {}: exit {code:?}, stderr {err:?}, want {want:?}", case.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn named_pipes_and_devices_are_refused_not_read() {
    let d = dir("fifo");
    let fifo = d.join("fifo.jsonl");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // A reader that opened the pipe would wait for a writer forever: hung.
    for (cmd, args) in READERS {
        let o = run(args, &fifo.display().to_string(), &d, None);
        assert_eq!(o.status.code(), Some(1), "{cmd}");
        assert_eq!(
            text(&o.stderr),
            format!(
                "tracer: {}: not a regular file (a named pipe): give a trace file, or `-` to read one from stdin\n",
                fifo.display()
            ),
            "{cmd}"
        );
    }
    let o = run(&["summary", "{T}"], "/dev/urandom", &d, None);
    assert_eq!(
        text(&o.stderr),
        "tracer: /dev/urandom: not a regular file (a character device): give a trace file, or `-` to read one from stdin\n"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// What every command says about a file that is read but lacks something:
/// each warning once, naming the file, whatever the command then does.
#[test]
fn missing_header_footer_and_blank_lines_are_told_alike() {
    let d = dir("warn");
    let no_header = d.join("no_header.jsonl");
    let mut v = body();
    v.push(FOOTER.into());
    std::fs::write(&no_header, trace(&v)).unwrap();
    let no_footer = d.join("no_footer.jsonl");
    let mut v = vec![HEADER.to_string()];
    v.extend(body());
    std::fs::write(&no_footer, trace(&v)).unwrap();
    let cases = [
        (
            &no_header,
            format!(
                "warning: {}: no header (line 1 is a `memory` line): the trace's format version is unknown; read as version 2\n",
                no_header.display()
            ),
        ),
        (
            &no_footer,
            format!(
                "warning: {}: no footer: the recording did not end normally (tracer killed, or its disk full?); its loss counts are unknown\n",
                no_footer.display()
            ),
        ),
    ];
    for (p, want) in &cases {
        for (cmd, args) in READERS {
            let o = run(args, &p.display().to_string(), &d.join(cmd), None);
            assert_eq!(text(&o.stderr).matches(want.as_str()).count(), 1, "{cmd} {}: {}", p.display(), text(&o.stderr));
        }
    }
    // Blank lines: skipped by every command, the output as without them.
    let clean = d.join("clean.jsonl");
    std::fs::write(&clean, whole()).unwrap();
    let blank = d.join("blank.jsonl");
    std::fs::write(&blank, whole().replacen('\n', "\n\n  \n", 2)).unwrap();
    for (cmd, args) in READERS {
        let out = d.join(format!("b-{cmd}"));
        let a = run(args, &clean.display().to_string(), &out, None);
        let b = run(args, &blank.display().to_string(), &out, None);
        assert_eq!(a.status.code(), b.status.code(), "{cmd}");
        assert_eq!(text(&a.stdout), text(&b.stdout).replace("blank", "clean"), "{cmd}");
        // (plot's "read … in 0.0 s" line has timings.)
        let untimed =
            |o: &Output| text(&o.stderr).lines().filter(|l| !l.starts_with("read ")).collect::<Vec<_>>().join("\n");
        assert_eq!(untimed(&a), untimed(&b).replace("blank", "clean"), "{cmd}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_cut_gzip_trace_keeps_its_complete_lines_in_every_command() {
    let d = dir("cutgz");
    // Enough lines that half the compressed file holds many whole ones.
    let mut v = vec![HEADER.to_string()];
    for i in 0..20_000u64 {
        v.push(format!(
            r#"{{"ts":{},"pid":10,"tid":10,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k{}","grid":[1,1,1],"block":[32,1,1],"stream":"0x0"}}"#,
            10_000 + i * 1000,
            i % 7
        ));
    }
    v.push(FOOTER.into());
    let mut e = flate2_encode(trace(&v).as_bytes());
    e.truncate(e.len() / 2);
    let p = d.join("cut.jsonl.gz");
    std::fs::write(&p, &e).unwrap();
    let mut stopped = None;
    for (cmd, args) in READERS {
        let o = run(args, &p.display().to_string(), &d.join(cmd), None);
        let err = text(&o.stderr);
        let prefix = format!(
            "warning: {}: the gzip stream ends early (the recording was cut off); read up to its last complete line, line ",
            p.display()
        );
        let at = err.find(&prefix).unwrap_or_else(|| panic!("{cmd}: {err}"));
        let n: u64 = err[at + prefix.len()..].split('\n').next().unwrap().parse().unwrap();
        assert!(n > 100 && n < 20_000, "{cmd}: {n}");
        assert_eq!(*stopped.get_or_insert(n), n, "{cmd}");
    }
    // Summary counts exactly the complete launch lines (all but the header).
    let o = run(&["summary", "{T}"], &p.display().to_string(), &d, None);
    let n = stopped.unwrap();
    assert!(text(&o.stdout).contains(&format!("{} kernel launches", n - 1)), "{}", text(&o.stdout));
    std::fs::remove_dir_all(&d).unwrap();
}

fn flate2_encode(b: &[u8]) -> Vec<u8> {
    let mut c = Command::new("gzip").arg("-c").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut w = c.stdin.take().unwrap();
    let b = b.to_vec();
    let t = std::thread::spawn(move || w.write_all(&b).unwrap());
    let out = c.wait_with_output().unwrap();
    t.join().unwrap();
    out.stdout
}

#[test]
fn a_dash_reads_the_trace_from_stdin_plain_or_compressed() {
    let d = dir("stdin");
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/simple_inference_ioctls.jsonl.gz");
    let gz = std::fs::read(&committed).unwrap();
    let plain = {
        let mut c = Command::new("gzip").args(["-dc"]).arg(&committed).output().unwrap();
        std::mem::take(&mut c.stdout)
    };
    for (cmd, args) in [
        ("summary", &["summary", "{T}"][..]),
        ("ioctls", &["ioctls", "{T}", "--json"][..]),
        ("report", &["report", "{T}", "--json"][..]),
    ] {
        let want = run(args, &committed.display().to_string(), &d, None);
        assert_eq!(want.status.code(), Some(0), "{cmd}");
        for input in [&gz, &plain] {
            let got = run(args, "-", &d, Some(input));
            assert_eq!(got.status.code(), Some(0), "{cmd}: {}", text(&got.stderr));
            assert_eq!(
                text(&got.stdout),
                text(&want.stdout).replace(&committed.display().to_string(), "stdin"),
                "{cmd}"
            );
        }
    }
    // plot reads it twice (figures, then the bound timeline): from the one copy.
    let o = run(&["plot", "{T}", "-o", "{O}", "--format", "svg"], "-", &d.join("plot"), Some(&gz));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let names: Vec<String> = ["timeline", "gaps", "phases"]
        .iter()
        .map(|n| format!("{}/stdin_{n}.svg\n", d.join("plot").display()))
        .collect();
    assert_eq!(text(&o.stdout), names.concat());
    // Every reader takes `-` (the same answer as for the file).
    let bad = "{\"type\":\"header\",\"format\":\"tracer-jsonl\",\"format_version\":7}\n";
    for (cmd, args) in READERS {
        let o = run(args, "-", &d.join(cmd), Some(bad.as_bytes()));
        assert_eq!(
            text(&o.stderr),
            "tracer: stdin: line 1: header field `format_version` = 7: written by a newer tracer (this one reads version 2); use a newer tracer\n",
            "{cmd}"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_recording_whose_manifest_leaves_its_directory_is_refused() {
    let d = dir("manifest");
    let rec = d.join("evil.rec");
    std::fs::create_dir_all(&rec).unwrap();
    std::fs::write(
        rec.join("manifest.json"),
        r#"{"format":"tracer-recording","schema_version":1,"trace":"../../../../etc/passwd"}"#,
    )
    .unwrap();
    std::fs::write(rec.join("trace.jsonl"), whole()).unwrap();
    for (cmd, args) in READERS {
        let o = run(args, &rec.display().to_string(), &d.join(cmd), None);
        assert_eq!(o.status.code(), Some(1), "{cmd}");
        assert_eq!(
            text(&o.stderr),
            format!(
                "tracer: {}: trace: \"../../../../etc/passwd\" leaves the recording directory (paths must be relative, without `..`)\n",
                rec.join("manifest.json").display()
            ),
            "{cmd}"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// Runs tracer with its address space limited to `mib` MiB (RLIMIT_AS).
fn limited(mib: u64, args: &[&str]) -> Output {
    let cmd = format!("ulimit -v {}; exec \"$0\" \"$@\"", mib * 1024);
    let child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .arg(TRACER)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    output_unless_hung(child, &format!("tracer {} (in {mib} MiB)", args.join(" ")))
}

#[test]
fn ioctls_memory_does_not_grow_with_the_trace() {
    let d = dir("ioctls-mem");
    let p = d.join("many.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
    writeln!(f, "{HEADER}").unwrap();
    // 400,000 ioctl lines (120 MB): keeping every line (as before: 865 MB
    // resident for this file) does not fit in the limit of 256 MiB of
    // address space; streaming needs ~35 MB.
    const N: u64 = 400_000;
    for i in 0..N {
        writeln!(
            f,
            r#"{{"ts":{},"pid":10,"tid":10,"type":"ioctl","op":"ioctl","name":"RM_CONTROL","duration_us":1.5,"cuda_call":"cuLaunchKernel","device":"/dev/nvidiactl","fields":{{"cmd_name":"NV2080_CTRL_CMD_GPU_GET_INFO","cmd":"0x20800101","hClient":"0xc1d00001","hObject":"0x5c000001","params_size":32,"status":0}}}}"#,
            1000 + i
        )
        .unwrap();
    }
    writeln!(f, "{FOOTER}").unwrap();
    drop(f);
    let o = limited(256, &["ioctls", p.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["total"], N);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn image_reads_no_device_and_no_endless_file() {
    // Endless, in 512 MiB: reading it would fail on memory or hang.
    for dev in ["/dev/zero", "/dev/urandom"] {
        let o = limited(512, &["image", dev]);
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(
            text(&o.stderr),
            format!(
                "tracer: {dev}: not a regular file (a character device): give an image file (fatbin, cubin, PTX, or a library with a .nv_fatbin section)\n"
            )
        );
    }
}

/// Every side input has a bound: a durations file, a recording's manifest and a web config file
/// that are a device, a pipe or a 2 GB sparse file are refused in one line, under 256 MiB of
/// address space, before a byte is read (a pipe is not waited on).
#[test]
fn side_inputs_are_bounded() {
    let d = dir("side-inputs");
    let fifo = d.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let sparse = d.join("sparse");
    std::fs::File::create(&sparse).unwrap().set_len(2_000_000_000).unwrap();
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/simple_inference.jsonl.gz");
    let kinds = [
        ("/dev/zero".to_string(), "not a regular file (a character device)"),
        (fifo.display().to_string(), "not a regular file (a named pipe)"),
    ];
    for (path, why) in &kinds {
        for cmd in [["gaps", trace, "--durations", path.as_str()], ["whatif", trace, "--durations", path.as_str()]] {
            let o = limited(256, &cmd);
            assert_eq!(o.status.code(), Some(1), "{cmd:?}");
            assert_eq!(text(&o.stderr), format!("tracer: {path}: {why}: a durations file must be a regular file\n"));
        }
        let o = limited(256, &["agent", "--listen", "127.0.0.1:0", "--all-libcuda", "--web.config.file", path]);
        assert_eq!(o.status.code(), Some(2));
        assert_eq!(
            text(&o.stderr),
            format!("tracer: --web.config.file: {path}: {why}: a web config file must be a regular file\n")
        );
    }
    let o = limited(256, &["gaps", trace, "--durations", sparse.to_str().unwrap()]);
    assert_eq!(
        text(&o.stderr),
        format!(
            "tracer: {}: 1.9 GiB is larger than a durations file may be (64.0 MiB): is it the right file?\n",
            sparse.display()
        )
    );
    // A recording whose manifest is 2 GB (sparse) or a link to /dev/zero.
    let rec = d.join("x.rec");
    std::fs::create_dir_all(&rec).unwrap();
    std::fs::write(rec.join("trace.jsonl"), whole()).unwrap();
    std::fs::rename(&sparse, rec.join("manifest.json")).unwrap();
    for cmd in ["summary", "report", "gaps", "plot"] {
        let o = limited(256, &[cmd, rec.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{cmd}");
        assert_eq!(
            text(&o.stderr),
            format!(
                "tracer: {}: 1.9 GiB is larger than a recording's manifest may be (64.0 MiB): is it the right file?\n",
                rec.join("manifest.json").display()
            ),
            "{cmd}"
        );
    }
    std::fs::remove_file(rec.join("manifest.json")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", rec.join("manifest.json")).unwrap();
    let o = limited(256, &["summary", rec.to_str().unwrap()]);
    assert_eq!(
        text(&o.stderr),
        format!(
            "tracer: {}: a symbolic link inside {}: refused (a recording's files are read from inside it, never through a link)\n",
            rec.join("manifest.json").display(),
            rec.display()
        )
    );
    // The calibration replay writes into a recording, a link out of it: refused as a link.
    std::fs::remove_file(rec.join("manifest.json")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", rec.join("kernel-durations.json")).unwrap();
    let o = limited(256, &["gaps", rec.to_str().unwrap(), "--timeline", "inferred"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).ends_with(&format!(
            "tracer: {}: a symbolic link inside {}: refused (a recording's files are read from inside it, never through a link)\n",
            rec.join("kernel-durations.json").display(),
            rec.display()
        )),
        "{}",
        text(&o.stderr)
    );
    std::fs::remove_dir_all(&d).unwrap();
}
