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

fn assert_same(a: &Trace, b: &Trace) {
    let d = |x: &dyn std::fmt::Debug| format!("{x:?}");
    assert_eq!(d(&a.calls), d(&b.calls));
    assert_eq!(d(&a.procs), d(&b.procs));
    assert_eq!(d(&a.ioctls), d(&b.ioctls));
    assert_eq!(d(&a.markers), d(&b.markers));
    assert_eq!(d(&a.power), d(&b.power));
    assert_eq!(d(&a.gpu), d(&b.gpu));
    assert_eq!(a.strings.names(), b.strings.names());
    assert_eq!(a.geoms, b.geoms);
    let mut ns: Vec<_> = a.nonblocking_streams.iter().collect();
    let mut nb: Vec<_> = b.nonblocking_streams.iter().collect();
    ns.sort();
    nb.sort();
    assert_eq!(ns, nb);
    assert_eq!(d(&a.loss), d(&b.loss));
    assert_eq!((a.lines, &a.unknown_types, a.truncated), (b.lines, &b.unknown_types, b.truncated));
    assert_eq!((&a.header, &a.footer), (&b.header, &b.footer));
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
