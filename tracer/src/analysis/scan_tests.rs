//! The trace model read through the fast scanner (tracer_format::line::scan)
//! against the model read with serde_json only, the reference, on every
//! committed recording, in one pass and in parts. The scanner's own tests,
//! line by line, are tracer-format's line/scan_tests.rs.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::model::{Trace, TraceBuilder};

fn recordings() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".jsonl.gz"))
        .collect();
    v.sort();
    v
}

fn load(p: &Path, reference: bool) -> Trace {
    let mut b = TraceBuilder::new(&p.display().to_string());
    b.reference = reference;
    let (_, truncated) = tracer_format::read::for_each_raw(p, Arc::default(), |n, bytes| b.add_line(n, bytes)).unwrap();
    if truncated {
        b.set_truncated();
    }
    b.finish()
}

/// Every field of the two models is the same (each one named: a new field must be compared).
fn assert_same(a: &Trace, b: &Trace) {
    let d = |x: &dyn std::fmt::Debug| format!("{x:?}");
    let Trace {
        path: _,
        header,
        footer,
        calls,
        procs,
        ioctls,
        markers,
        power,
        gpu,
        gpu_windows,
        strings,
        geoms,
        nonblocking_streams,
        loss,
        lines,
        unknown_types,
        truncated,
        graphs,
        graph_node_params,
        sched,
        stacks,
        library_durations,
    } = a;
    assert_eq!(d(calls), d(&b.calls));
    assert_eq!(d(procs), d(&b.procs));
    assert_eq!(d(ioctls), d(&b.ioctls));
    assert_eq!(d(markers), d(&b.markers));
    assert_eq!(d(power), d(&b.power));
    assert_eq!(d(gpu), d(&b.gpu));
    assert_eq!(d(gpu_windows), d(&b.gpu_windows));
    assert_eq!(strings.names(), b.strings.names());
    assert_eq!(geoms, &b.geoms);
    let mut ns: Vec<_> = nonblocking_streams.iter().collect();
    let mut nb: Vec<_> = b.nonblocking_streams.iter().collect();
    ns.sort();
    nb.sort();
    assert_eq!(ns, nb);
    assert_eq!(d(loss), d(&b.loss));
    assert_eq!((lines, unknown_types, truncated), (&b.lines, &b.unknown_types, &b.truncated));
    assert_eq!((header, footer), (&b.header, &b.footer));
    assert_eq!(graphs, &b.graphs);
    let sorted = |m: &std::collections::HashMap<(u64, u32, u32), Arc<Vec<super::model::graph_records::ExecNode>>>| {
        let mut v: Vec<_> = m.iter().map(|(k, n)| (*k, d(n))).collect();
        v.sort();
        v
    };
    assert_eq!(sorted(graph_node_params), sorted(&b.graph_node_params));
    assert_eq!(d(sched), d(&b.sched));
    assert_eq!(stacks.digest(), b.stacks.digest());
    assert_eq!(library_durations, &b.library_durations);
}

#[test]
fn the_model_of_every_recording_is_the_reference_model() {
    for p in recordings() {
        let fast = load(&p, false);
        let reference = load(&p, true);
        assert!(fast.calls.len() > 1000, "{}", p.display());
        assert_same(&fast, &reference);
    }
}

/// The parallel loader (parts of a plain file read by several threads, then
/// joined) gives the reference model too.
#[test]
fn read_in_parts_every_recording_gives_the_reference_model() {
    let dir = std::env::temp_dir().join(format!("tracer-parts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for p in recordings() {
        let plain = dir.join("t.jsonl");
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(std::fs::File::open(&p).unwrap()), &mut text)
            .unwrap();
        std::fs::write(&plain, &text).unwrap();
        let mut reference = load(&p, true);
        reference.path = plain.display().to_string();
        for parts in [2, 3, 7] {
            // The parallel path itself (load_with falls back to one pass on errors).
            let mut pr = crate::cli::progress::Progress::new(0, "");
            let input = tracer_format::read::Input::resolve(&plain).unwrap();
            let t = crate::cli::load::load_parts(&input, text.len() as u64, parts, &mut pr).unwrap().0.finish();
            assert_eq!(t.path, reference.path);
            assert_same(&t, &reference);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A default recording of the H200 (tests/fixtures/parts: some lines of every
/// type of a 4-layer MLP loop recorded there, in file order: scheduler events,
/// stacks and samples, a measured window and its records, the durations
/// library's line) read in parts gives the one-pass model. Files of 64 MiB
/// and more are read in parts: such a trace lost its `sched` and
/// `durations` lines, and its samples' processes, before.
#[test]
fn read_in_parts_a_default_recording_gives_the_one_pass_model() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parts/mlp_default_h200.jsonl");
    let text = std::fs::read(&src).unwrap();
    let lines = text.iter().filter(|&&b| b == b'\n').count();
    let reference = load(&src, true);
    // what the parts must carry is there
    assert_eq!(reference.lines as usize, lines);
    assert!(reference.sched.recorded && reference.sched.off.values().map(Vec::len).sum::<usize>() == 60);
    assert_eq!(reference.sched.seen.len(), 37);
    assert_eq!(reference.gpu_windows.len(), 1);
    assert_eq!(reference.library_durations.as_ref().map(|(_, f)| f.kernels.len()), Some(3));
    assert_eq!(reference.stacks.all_samples().filter(|s| s.0 != 0).count(), 100);
    assert_eq!(load(&src, false).stacks.digest(), reference.stacks.digest());
    for parts in [2, 3, 7, 50, lines] {
        let mut pr = crate::cli::progress::Progress::new(0, "");
        let input = tracer_format::read::Input::resolve(&src).unwrap();
        let t = crate::cli::load::load_parts(&input, text.len() as u64, parts, &mut pr).unwrap().0.finish();
        assert_same(&t, &reference);
    }
}
