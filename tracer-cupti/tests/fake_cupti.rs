//! libtracer_cupti.so end to end without a GPU: a C program plays the CUDA
//! driver (dlopen + InitializeInjection), a fake libcupti produces known
//! records (tests/fakecupti/), and we decode what arrives in the FIFO.
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use tracer_cupti::wire::{ClockMethod, Msg, Span, StreamDecoder};

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakecupti")
}

/// The cdylib cargo built for this test run: next to the test executable in
/// deps/ (`cargo test` does not copy it up to target/<profile>/).
fn injection_lib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let p = exe.parent().unwrap().join("libtracer_cupti.so");
    assert!(p.exists(), "{} missing: run `cargo build -p tracer-cupti` first", p.display());
    p
}

/// Builds the fake libcupti and the driver program once (cc).
fn built() -> &'static (PathBuf, PathBuf) {
    static B: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    B.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fakecupti");
        std::fs::create_dir_all(&out).unwrap();
        let lib = out.join("libfakecupti.so");
        let drv = out.join("inject_driver");
        let cc = |args: &[&str]| {
            let s = Command::new("cc").args(args).status().expect("running cc");
            assert!(s.success(), "cc {args:?} failed");
        };
        cc(&["-shared", "-fPIC", "-O1", "-o", lib.to_str().unwrap(), here().join("fakecupti.c").to_str().unwrap()]);
        cc(&["-O1", "-o", drv.to_str().unwrap(), here().join("inject_driver.c").to_str().unwrap(), "-ldl"]);
        (lib, drv)
    })
}

fn monotonic_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes a local timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

struct Run {
    status: i32,
    stdout: String,
    stderr: String,
    msgs: Vec<(u32, Msg)>,
    pid: u32,
    t0: u64,
    t1: u64,
}

/// Runs the driver with a FIFO like the tracer's, returns what it sent.
fn run(tag: &str, cupti_lib: &str, extra_env: &[(&str, &str)], args: &[&str]) -> Run {
    let (_, drv) = built();
    let fifo = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fifo-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_file(&fifo);
    let c = CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: plain syscalls on our path.
    let fd = unsafe {
        assert_eq!(libc::mkfifo(c.as_ptr(), 0o600), 0);
        libc::open(c.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK)
    };
    assert!(fd >= 0);
    let t0 = monotonic_ns();
    let out = Command::new(drv)
        .args(args)
        .env("CUDA_INJECTION64_PATH", injection_lib())
        .env("TRACER_CUPTI_FIFO", &fifo)
        .env("TRACER_CUPTI_LIB", cupti_lib)
        .envs(extra_env.iter().copied())
        .output()
        .unwrap();
    let t1 = monotonic_ns();
    let mut bytes = vec![];
    let mut buf = [0u8; 65536];
    loop {
        // SAFETY: reads into a local buffer.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        bytes.extend_from_slice(&buf[..n as usize]);
    }
    // SAFETY: our fd.
    unsafe { libc::close(fd) };
    let _ = std::fs::remove_file(&fifo);
    let mut msgs = vec![];
    let mut d = StreamDecoder::default();
    d.feed(&bytes, &mut |pid, m| msgs.push((pid, m.expect("well-formed message"))));
    assert_eq!(d.pending(), 0);
    let pid = msgs.first().map_or(0, |m| m.0);
    assert!(msgs.iter().all(|m| m.0 == pid), "one sender");
    Run {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
        msgs,
        pid,
        t0,
        t1,
    }
}

#[test]
fn records_streams_names_drops_and_the_final_flush_arrive_exactly() {
    let (lib, _) = built();
    // No flush thread: the atexit flush delivers everything.
    let r = run("full", lib.to_str().unwrap(), &[("TRACER_CUPTI_FLUSH_MS", "0")], &[]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let m: Vec<Msg> = r.msgs.into_iter().map(|x| x.1).collect();
    assert!(r.pid > 0);
    // The records' timestamps: the fake stamps them with the callback we
    // registered (CLOCK_MONOTONIC), so they fall inside the run.
    let Msg::Kernel { span, .. } = &m[5] else { panic!("{m:?}") };
    let t = span.start;
    assert!(r.t0 <= t && t <= r.t1, "{} <= {t} <= {}", r.t0, r.t1);
    let sp = |start: u64, end: u64, stream: u32, correlation: u32| Span {
        start,
        end,
        device: 0,
        context: 1,
        stream,
        correlation,
    };
    assert_eq!(
        m,
        vec![
            Msg::Hello {
                cupti_version: 99,
                clock: ClockMethod::Callback,
                offset_ns: 0,
                cupti_path: lib.display().to_string()
            },
            Msg::Note { text: "hw_trace: refused (CUPTI_ERROR_NOT_SUPPORTED (27)): software timestamps".into() },
            Msg::Stream { context: 1, stream: 7, handle: 0 },
            Msg::Stream { context: 1, stream: 13, handle: 0x5000 },
            Msg::Name { id: 1, name: "_Z3fooPf".into() },
            Msg::Kernel {
                span: sp(t, t + 4500, 13, 41),
                grid: [2, 3, 4],
                block: [128, 1, 1],
                shared_mem: 256,
                name_id: 1,
                graph_id: 0,
                graph_node_id: 0
            },
            Msg::Kernel {
                span: sp(t + 10000, t + 14500, 7, 42),
                grid: [2, 3, 4],
                block: [128, 1, 1],
                shared_mem: 256,
                name_id: 1,
                graph_id: 3,
                graph_node_id: 0x2_0000_0005
            },
            Msg::Memcpy {
                span: sp(t + 20000, t + 22250, 7, 43),
                bytes: 1 << 20,
                copy_kind: 1,
                src_kind: 1,
                dst_kind: 3,
                flags: 0
            },
            Msg::Memset { span: sp(t + 30000, t + 30001, 7, 44), bytes: 64, value: 0, mem_kind: 3 },
            Msg::Dropped { context: 1, stream: 7, count: 3 },
            Msg::Bye { records: 4, buffers: 1, dropped_cupti: 3, dropped_sink: 0 },
        ]
    );
}

#[test]
fn without_the_timestamp_callback_an_offset_is_measured_and_applied() {
    let (lib, _) = built();
    let r = run("offset", lib.to_str().unwrap(), &[("FAKECUPTI_NO_TS", "1")], &[]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let Msg::Hello { clock, offset_ns, .. } = &r.msgs[0].1 else { panic!("{:?}", r.msgs) };
    assert_eq!(*clock, ClockMethod::Offset);
    // The fake's clock runs 1 s ahead of CLOCK_MONOTONIC.
    assert!((-1_000_100_000..=-999_900_000).contains(offset_ns), "{offset_ns}");
    let k = r.msgs.iter().find_map(|(_, m)| if let Msg::Kernel { span, .. } = m { Some(*span) } else { None }).unwrap();
    assert!(r.t0 <= k.start && k.start <= r.t1, "{} <= {} <= {}", r.t0, k.start, r.t1);
    assert_eq!(k.end - k.start, 4500);
}

#[test]
fn hardware_timestamps_are_asked_for_once_the_driver_has_initialised() {
    let (lib, _) = built();
    // the fake answers CUPTI_ERROR_NOT_INITIALIZED (15) inside cuInit, as CUPTI 13.0 did on an
    // H200, and takes them after its CU_INIT_FINISHED callback, as on Blackwell; the kinds are
    // switched off and on again, and the records still arrive
    let env = [("TRACER_CUPTI_FLUSH_MS", "0"), ("FAKECUPTI_HW_TRACE", "1")];
    let r = run("hes", lib.to_str().unwrap(), &env, &[]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let notes: Vec<&str> = r
        .msgs
        .iter()
        .filter_map(|(_, m)| if let Msg::Note { text } = m { Some(text.as_str()) } else { None })
        .collect();
    assert_eq!(notes, ["hw_trace: on (hardware kernel timestamps)"]);
    let kernels = r.msgs.iter().filter(|(_, m)| matches!(m, Msg::Kernel { .. })).count();
    assert_eq!(kernels, 2, "{:?}", r.msgs);
}

#[test]
fn exec_skips_the_final_flush() {
    let (lib, _) = built();
    let r = run("exec", lib.to_str().unwrap(), &[("TRACER_CUPTI_FLUSH_MS", "0")], &["exec"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let kinds: Vec<&str> = r
        .msgs
        .iter()
        .map(|(_, m)| match m {
            Msg::Hello { .. } => "hello",
            Msg::Note { .. } => "note",
            Msg::Stream { .. } => "stream",
            Msg::Bye { .. } => "bye",
            _ => "other",
        })
        .collect();
    // Stream ids wait for the next buffer, which never came.
    assert_eq!(kinds, ["hello", "note"]);
}

fn kinds(msgs: &[(u32, Msg)]) -> Vec<&'static str> {
    msgs.iter()
        .map(|(_, m)| match m {
            Msg::Hello { .. } => "hello",
            Msg::Stream { .. } => "stream",
            Msg::Name { .. } => "name",
            Msg::Kernel { .. } => "kernel",
            Msg::Memcpy { .. } => "memcpy",
            Msg::Memset { .. } => "memset",
            Msg::Dropped { .. } => "dropped",
            Msg::Error { .. } => "error",
            Msg::Bye { .. } => "bye",
            Msg::Window { .. } => "window",
            Msg::Note { .. } => "note",
        })
        .collect()
}

#[test]
fn sampling_turns_records_on_only_inside_the_windows() {
    let (lib, _) = built();
    // 300 launches 1 ms apart (at least 300 ms); records on 20 ms of every 100 ms, no
    // lead-in (its first window is tested in root_gpu_timestamps)
    let env = [("TRACER_CUPTI_SAMPLE", "20/100/0"), ("TRACER_CUPTI_FLUSH_MS", "10")];
    let r = run("sample", lib.to_str().unwrap(), &env, &["launch", "300", "1000"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let launches: Vec<u64> = r.stdout.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(launches.len(), 300);
    let windows: Vec<(u64, u64)> = r
        .msgs
        .iter()
        .filter_map(|(_, m)| if let Msg::Window { start, end, .. } = m { Some((*start, *end)) } else { None })
        .collect();
    let kernels: Vec<u64> = r
        .msgs
        .iter()
        .filter_map(|(_, m)| if let Msg::Kernel { span, .. } = m { Some(span.start) } else { None })
        .collect();
    // windows at 0, 100, 200 ms and the one open at exit (300 ms or later)
    assert!(windows.len() >= 4, "{windows:?}");
    for (i, w) in windows.iter().enumerate() {
        // each lasts its 20 ms (the last one is cut at exit), and the next starts a period later
        assert!(i == windows.len() - 1 || w.1 - w.0 >= 20_000_000, "{windows:?}");
        if let Some(n) = windows.get(i + 1) {
            assert!(n.0 - w.0 >= 100_000_000 && n.0 >= w.1, "{windows:?}");
        }
    }
    let inside = |t: u64| windows.iter().any(|w| w.0 <= t && t < w.1);
    let measured: Vec<u64> = launches.iter().copied().filter(|&t| inside(t)).collect();
    // launches every ≥ 1 ms: some inside every window closed before exit
    // (how many depends on the machine's load), and not all
    for w in &windows[..windows.len() - 1] {
        assert!(launches.iter().any(|&t| w.0 <= t && t < w.1), "no launch in {w:?}");
    }
    assert!(measured.len() < 300, "{} of 300 launches in windows", measured.len());
    // every launch inside a window has its record (exactly its time), and every record is a launch
    let recorded: std::collections::BTreeSet<u64> = kernels.iter().copied().collect();
    assert_eq!(recorded.len(), kernels.len());
    assert!(measured.iter().all(|t| recorded.contains(t)), "a launch inside a window lacks its record");
    assert!(kernels.iter().all(|t| launches.contains(t)));
    // records outside the windows: only launches between enabling and the
    // window's start stamp, or between its end stamp and disabling (none or a few)
    let outside = kernels.iter().filter(|&&t| !inside(t)).count();
    assert!(outside <= 2 * windows.len(), "{outside} records outside the windows");
    assert_eq!(kinds(&r.msgs).last(), Some(&"bye"));
}

#[test]
fn the_flush_thread_delivers_before_the_process_ends() {
    let (lib, _) = built();
    // The driver waits until the fake libcupti has handed its buffer to the
    // library (which writes the records before its callback returns), then
    // execs: no atexit flush, so only the flush thread can have sent them.
    let r = run("periodic", lib.to_str().unwrap(), &[("TRACER_CUPTI_FLUSH_MS", "10")], &["wait-exec"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(
        kinds(&r.msgs),
        ["hello", "note", "stream", "stream", "name", "kernel", "kernel", "memcpy", "memset", "dropped"]
    );
}

#[test]
fn a_missing_cupti_is_reported_through_the_fifo() {
    let r = run("nocupti", "/nonexistent/libcupti.so", &[], &[]);
    assert_eq!(r.status, 3, "InitializeInjection returns 0: {}", r.stderr);
    assert_eq!(r.msgs.len(), 1);
    let Msg::Error { text } = &r.msgs[0].1 else { panic!("{:?}", r.msgs) };
    assert!(
        text.starts_with(
            "cannot load the CUPTI library /nonexistent/libcupti.so (--cupti-lib): /nonexistent/libcupti.so:"
        ),
        "{text}"
    );
}

/// The windows of a run: (start, end, attach_ns, detach_ns, records, new_keys).
fn windows_of(r: &Run) -> Vec<(u64, u64, u64, u64, u64, u64)> {
    r.msgs
        .iter()
        .filter_map(|(_, m)| match m {
            Msg::Window { start, end, attach_ns, detach_ns, records, new_keys, .. } => {
                Some((*start, *end, *attach_ns, *detach_ns, *records, *new_keys))
            }
            _ => None,
        })
        .collect()
}

/// How the windows of a run came about: (extensions, demanded, planned_gap_ns).
fn history_of(r: &Run) -> Vec<(u64, bool, u64)> {
    r.msgs
        .iter()
        .filter_map(|(_, m)| match m {
            Msg::Window { extensions, demanded, planned_gap_ns, .. } => Some((*extensions, *demanded, *planned_gap_ns)),
            _ => None,
        })
        .collect()
}

/// "finalizes N calls_while_detached M records_at_returns K" from the driver's stderr.
fn finalize_counts(stderr: &str) -> (u64, u64, u64) {
    let l = stderr.lines().find(|l| l.starts_with("finalizes ")).expect("the driver's counts");
    let v: Vec<u64> = l.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    (v[0], v[1], v[2])
}

/// The windows' launches and whether they ended full, from their messages.
fn launches_of(r: &Run) -> Vec<(u64, bool)> {
    r.msgs
        .iter()
        .filter_map(|(_, m)| match m {
            Msg::Window { launches, full, .. } => Some((*launches, *full)),
            _ => None,
        })
        .collect()
}

#[test]
fn adaptive_windows_detach_cupti_between_them_and_back_off() {
    let (lib, _) = built();
    // 2200 launches ≥ 1 ms apart; windows of 20 ms, extended while new (up to 100 ms),
    // gaps up to 1 s, no budget
    let env = [("TRACER_CUPTI_SAMPLE", "adaptive:20/100/1000/0"), ("TRACER_CUPTI_FLUSH_MS", "10")];
    let r = run("adaptive", lib.to_str().unwrap(), &env, &["launch", "2200", "1000"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let launches: Vec<u64> = r.stdout.lines().map(|l| l.parse().unwrap()).collect();
    let w = windows_of(&r);
    let h = history_of(&r);
    assert!(w.len() >= 4, "{w:?}");
    // the one kernel (one name and geometry) is new in the first window only, which
    // was extended once for it (40 ms, the last extension finding nothing new); the
    // others were not extended, and none was demanded
    assert_eq!(w[0].5, 1, "{w:?}");
    assert!(w[1..].iter().all(|x| x.5 == 0), "{w:?}");
    assert!(w[0].1 - w[0].0 >= 40_000_000, "{w:?}");
    assert_eq!(h[0], (1, false, 0), "{h:?}");
    assert!(h[1..].iter().all(|&(ext, demanded, _)| ext == 0 && !demanded), "{h:?}");
    // every window but one still open at exit was detached by a launch's return (its
    // detach time is stamped): CUPTI finalized once per such window, never called while
    // detached (no flush, no query)
    let (finalizes, bad, at_returns) = finalize_counts(&r.stderr);
    let detached = w.iter().filter(|x| x.3 > 0).count();
    assert_eq!(finalizes as usize, detached, "{w:?}");
    assert!(detached >= w.len() - 1, "detach time: {w:?}");
    assert_eq!(bad, 0);
    // each window's completed records were handed over by the window thread when it ended:
    // at the launch's return that detached CUPTI, only the launches since (one a ms here: at
    // most two a window), not the window's
    assert!(at_returns <= 2 * finalizes, "{at_returns} records at returns, {finalizes} detaches");
    // ~1 launch a ms: no window held the 4,096 launches that end one early; each counted
    // its launches (one per record)
    let l = launches_of(&r);
    assert!(l.iter().all(|&(_, full)| !full), "{l:?}");
    assert!(w.iter().zip(&l).all(|(x, &(n, _))| n == x.4), "{w:?} {l:?}");
    assert!(w[1..].iter().all(|x| x.2 > 0), "attach time: {w:?}");
    // the gaps planned: 10 windows, then four times longer up to 1 s (200, 800, 1000 ms), as
    // the windows' policy has it for windows that held records and nothing new; they
    // lasted at least that
    let a = tracer_cupti::sample::Adaptive::parse("20/100/1000/0").unwrap();
    let mut prev = 0;
    for i in 1..w.len() {
        let want = a.next_gap(prev, w[i - 1].4, 0, false);
        assert_eq!(h[i].2, want * 1_000_000, "window {i}: {h:?} {w:?}");
        assert!(w[i].0 - w[i - 1].1 >= want * 1_000_000, "gap {i}: {w:?}");
        prev = want;
    }
    let planned: Vec<u64> = h[1..4].iter().map(|x| x.2 / 1_000_000).collect();
    assert_eq!(planned, [200, 800, 1000], "{h:?}");
    // every launch inside a window has its record, counted in its window
    let kernels: std::collections::BTreeSet<u64> = r
        .msgs
        .iter()
        .filter_map(|(_, m)| if let Msg::Kernel { span, .. } = m { Some(span.start) } else { None })
        .collect();
    for x in &w {
        let inside: Vec<u64> = launches.iter().copied().filter(|&t| x.0 <= t && t < x.1).collect();
        assert!(!inside.is_empty(), "no launch in {x:?}");
        assert!(inside.iter().all(|t| kernels.contains(t)), "a launch inside {x:?} lacks its record");
        assert!(x.4 >= inside.len() as u64, "{x:?}: {} inside", inside.len());
    }
    let notes: Vec<&str> = r
        .msgs
        .iter()
        .filter_map(|(_, m)| if let Msg::Note { text } = m { Some(text.as_str()) } else { None })
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    // adaptive windows attach CUPTI again after each detach: hardware timestamps are not asked for
    assert_eq!(
        notes[0],
        "hw_trace: not asked: adaptive windows attach CUPTI again after each detach, and hardware timestamps \
         allow no late attach: software timestamps"
    );
    // at exit: where the window thread was (the program ends in a gap: its windows back off) and
    // the demands it saw (none: no demand file)
    assert!(
        notes[1].starts_with("windows at exit: in the gap between windows (waiting for its end or a demand) since ")
            && notes[1].ends_with(" ms before exit; demands seen: 0"),
        "{notes:?}"
    );
    assert_eq!(kinds(&r.msgs).last(), Some(&"bye"));
}

#[test]
fn a_window_ends_once_its_launches_reach_the_cap() {
    let (lib, _) = built();
    // windows of 300 ms every 300 ms at most, but full at 25 launches (one a ms or so):
    // each ends after about 25 ms with its 25 launches, however long it was to last
    let env = [
        ("TRACER_CUPTI_SAMPLE", "adaptive:300/300/300/0"),
        ("TRACER_CUPTI_FLUSH_MS", "10"),
        (tracer_cupti::sample::WINDOW_LAUNCHES_ENV, "25"),
    ];
    let r = run("full", lib.to_str().unwrap(), &env, &["launch", "1500", "1000"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let launches: Vec<u64> = r.stdout.lines().map(|l| l.parse().unwrap()).collect();
    let (w, l) = (windows_of(&r), launches_of(&r));
    assert!(w.len() >= 3, "{w:?}");
    // every window ended full, at 25 launches or some more (those returning before the window
    // thread, woken, asked for the detach: a loaded machine wakes it late), long before the
    // 300 launches of 300 ms; the last one too, unless the program ended while it was open
    assert!(l[..l.len() - 1].iter().all(|&(_, full)| full), "{w:?} {l:?}");
    let ended: Vec<_> = w.iter().zip(&l).filter(|(_, x)| x.1).map(|(x, &(n, _))| (*x, n)).collect();
    assert!(ended.len() >= w.len() - 1, "{w:?} {l:?}");
    for &(x, n) in &ended {
        assert!((25..=75).contains(&n), "{x:?}: {n} launches");
        assert!(x.1 - x.0 < 150_000_000, "{x:?} lasted {} ms", (x.1 - x.0) / 1_000_000);
        // its records are its launches, each launch inside it recorded; it was detached
        let inside = launches.iter().filter(|&&t| x.0 <= t && t < x.1).count() as u64;
        assert_eq!((x.4, n), (inside, inside), "{x:?}");
        assert!(x.3 > 0, "detach time: {x:?}");
    }
    let (finalizes, bad, at_returns) = finalize_counts(&r.stderr);
    assert_eq!((finalizes as usize, bad), (ended.len(), 0), "{w:?}");
    assert!(at_returns <= 2 * finalizes, "{at_returns} records at returns, {finalizes} detaches");
}

#[test]
fn adaptive_windows_start_from_the_known_keys() {
    let (lib, _) = built();
    // the fake's one kernel (_Z3fooPf, grid 2x3x4, block 128x1x1, 256 bytes) is known
    let known = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("known-{}", std::process::id()));
    let k = tracer_cupti::sample::kernel_key(b"_Z3fooPf", [2, 3, 4], [128, 1, 1], 256);
    std::fs::write(&known, format!("{k:x}\n")).unwrap();
    let env = [
        ("TRACER_CUPTI_SAMPLE", "adaptive:20/100/4000/0"),
        ("TRACER_CUPTI_FLUSH_MS", "10"),
        ("TRACER_CUPTI_KNOWN", known.to_str().unwrap()),
    ];
    let r = run("known", lib.to_str().unwrap(), &env, &["launch", "1300", "1000"]);
    let _ = std::fs::remove_file(&known);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let w = windows_of(&r);
    let h = history_of(&r);
    // nothing new, and every record of work the library had: the first window is not
    // extended, and the next one is planned a quarter of the longest gap later (1 s,
    // not the 10 windows of work this run alone knew)
    assert!(w.len() >= 2, "{w:?}");
    assert!(w.iter().all(|x| x.5 == 0), "{w:?}");
    assert_eq!((h[0].0, h[1].2), (0, 1_000_000_000), "{h:?}");
    assert!(w[0].4 > 0, "{w:?}");
}

#[test]
fn the_budget_holds_the_windows_cost_to_its_share_of_the_run() {
    let (lib, _) = built();
    // windows of 20 ms with gaps of 40 ms, but their cost held to 0.01 % of the run:
    // each window opens only once the cost of those before it (attach, detach, 5 µs a
    // record) is 0.01 % of the time since the first one opened (0.05 % after a window
    // that met new work, or while none had records)
    let env = [("TRACER_CUPTI_SAMPLE", "adaptive:20/20/40/0.01"), ("TRACER_CUPTI_FLUSH_MS", "10")];
    let r = run("budget", lib.to_str().unwrap(), &env, &["launch", "1500", "1000"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let (w, h) = (windows_of(&r), history_of(&r));
    assert!(w.len() >= 2, "{w:?}");
    let (since, ms) = (w[0].0, 1_000_000u64);
    let mut spent = 0u64;
    for i in 1..w.len() {
        spent += tracer_cupti::sample::window_cost_ns(w[i - 1].2, w[i - 1].3, w[i - 1].4);
        // the learning share after new work, or while no window had records yet
        let learning = w[i - 1].5 > 0 || w[..i].iter().all(|x| x.4 == 0);
        let share = if learning { tracer_cupti::sample::LEARNING_SHARE as u64 } else { 1 };
        let due = spent * 10_000 / share;
        assert!(
            w[i].0 - since >= due,
            "window {i} opened {} ms in, due at {} ms: {w:?}",
            (w[i].0 - since) / ms,
            due / ms
        );
        // planned: the policy's 40 ms, or the budget's wait, decided after the window before ended
        let budget_at_most = due.saturating_sub(w[i - 1].1 - since);
        assert!(h[i].2 >= 40 * ms && h[i].2 <= budget_at_most.max(40 * ms), "window {i}: {h:?} {w:?}");
    }
    // the first window's records alone (≥ 5: 10 ms of learning budget each) push the second past the policy's gap
    if w[0].4 >= 5 {
        assert!(h[1].2 > 40 * ms, "{h:?} {w:?}");
    }
}

#[test]
fn with_a_horizon_the_budget_holds_in_every_stretch_of_it() {
    let (lib, _) = built();
    // windows of 20 ms with gaps of 40 ms, their cost held to 0.5 % of any 200 ms (2.5 % while
    // learning): a window opens only once the windows that ended in the 200 ms before it cost
    // at most that share of the 200 ms (of the time since the first window, early on). The
    // program launches nothing for its first 600 ms, as in a set-up: without the horizon that
    // time's credit lets the first windows among its launches cost more than this in 200 ms
    let env = [("TRACER_CUPTI_SAMPLE", "adaptive:20/20/40/0.5/200"), ("TRACER_CUPTI_FLUSH_MS", "10")];
    let r = run("horizon", lib.to_str().unwrap(), &env, &["launch", "6000", "100", "600"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let (w, h) = (windows_of(&r), history_of(&r));
    assert!(w.len() >= 3, "{w:?}");
    let (since, ms, horizon) = (w[0].0, 1_000_000u64, 200_000_000u64);
    let cost = |x: &(u64, u64, u64, u64, u64, u64)| tracer_cupti::sample::window_cost_ns(x.2, x.3, x.4);
    let mut waited = 0;
    for i in 1..w.len() {
        let learning = w[i - 1].5 > 0 || w[..i].iter().all(|x| x.4 == 0);
        let share = if learning { tracer_cupti::sample::LEARNING_SHARE as u64 } else { 1 };
        let open = w[i].0;
        // the windows that ended in the horizon before this one opened (by their end stamps,
        // which are no later than when the window thread counted them)
        let recent: u64 = w[..i].iter().filter(|x| x.1 + horizon >= open).map(cost).sum();
        let allowed = 50 * share * (open - since).min(horizon) / 10_000;
        assert!(recent <= allowed, "window {i}: {recent} ns in the last 200 ms, {allowed} allowed: {w:?}");
        waited += usize::from(h[i].2 > 40 * ms);
    }
    // the budget, not the policy's 40 ms, set some of the gaps
    assert!(waited >= 1, "{h:?} {w:?}");
}

#[test]
fn a_demanded_window_opens_at_once_instead_of_after_its_gap() {
    let (lib, _) = built();
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let (known, demand) =
        (tmp.join(format!("known-d-{}", std::process::id())), tmp.join(format!("demand-{}", std::process::id())));
    let k = tracer_cupti::sample::kernel_key(b"_Z3fooPf", [2, 3, 4], [128, 1, 1], 256);
    std::fs::write(&known, format!("{k:x}\n")).unwrap();
    std::fs::write(&demand, 0u64.to_le_bytes()).unwrap();
    // windows of 20 ms, gaps 200, 800, 3200 ms: windows open near 0, 220 and 1040 ms,
    // the next near 4260 ms; the demand comes at 1.5 s
    let env = [
        ("TRACER_CUPTI_SAMPLE", "adaptive:20/20/5000/0"),
        ("TRACER_CUPTI_FLUSH_MS", "10"),
        ("TRACER_CUPTI_KNOWN", known.to_str().unwrap()),
        ("TRACER_CUPTI_DEMAND", demand.to_str().unwrap()),
    ];
    let d = demand.clone();
    let asker = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(1_500));
        let t = monotonic_ns();
        std::fs::write(&d, 1u64.to_le_bytes()).unwrap();
        t
    });
    let r = run("demand", lib.to_str().unwrap(), &env, &["launch", "3000", "1000"]);
    let asked = asker.join().unwrap();
    let _ = (std::fs::remove_file(&known), std::fs::remove_file(&demand));
    assert_eq!(r.status, 0, "{}", r.stderr);
    let w = windows_of(&r);
    let h = history_of(&r);
    // the first window after the demand opened on it, cutting its planned gap short;
    // none before it was demanded
    let first = w.iter().position(|x| x.0 >= asked).expect("a window after the demand");
    assert!(first >= 1, "{w:?}");
    assert!(h[first].1, "asked at {asked}: {h:?} {w:?}");
    assert!(h[..first].iter().all(|x| !x.1), "{h:?}");
    // the exit note counts the one demand
    let exit: Vec<&str> = r
        .msgs
        .iter()
        .filter_map(|(_, m)| match m {
            Msg::Note { text } if text.starts_with("windows at exit: ") => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(exit.len(), 1, "{exit:?}");
    assert!(exit[0].contains("; demands seen: 1, the last ") && exit[0].ends_with(" ms before exit"), "{exit:?}");
}
