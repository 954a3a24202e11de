//! The in-process collector (`collect`, what `replay` measures its GPU time
//! with) against the fake libcupti of tests/fakecupti/: its known records
//! must come back decoded exactly, with the kernel name, CUPTI's drop count,
//! and CLOCK_MONOTONIC timestamps (through the timestamp callback).
#![cfg(feature = "collect")]

use std::path::{Path, PathBuf};
use std::process::Command;

use tracer_cupti::collect::{self, Op, monotonic_ns};

fn fake_cupti() -> PathBuf {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("collect");
    std::fs::create_dir_all(&out).unwrap();
    let lib = out.join("libfakecupti.so");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakecupti/fakecupti.c");
    let s = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o", lib.to_str().unwrap(), src.to_str().unwrap()])
        .status()
        .expect("running cc");
    assert!(s.success());
    lib
}

#[test]
fn the_fake_cuptis_records_come_back_exactly() {
    let lib = fake_cupti();
    let t0 = monotonic_ns();
    let c = collect::start(Some(lib.to_str().unwrap())).unwrap();
    assert_eq!((c.version(), c.clock()), (99, "callback"));
    assert_eq!(c.library(), lib.to_str().unwrap());
    let mut t = c.take();
    let t1 = monotonic_ns();
    assert_eq!(t.dropped, 3);
    t.activities.sort_by_key(|a| a.start);
    let a = &t.activities;
    assert_eq!(a.len(), 4, "{a:?}"); // the record of a kind we do not read is skipped
    let s = a[0].start;
    assert!(t0 <= s && s <= t1, "{t0} <= {s} <= {t1}: CLOCK_MONOTONIC");
    let row = |x: &collect::Activity| (x.op, x.start - s, x.end - s, x.stream, x.correlation, x.context, x.bytes);
    assert_eq!(
        a.iter().map(row).collect::<Vec<_>>(),
        vec![
            (Op::Kernel, 0, 4500, 13, 41, 1, 0),
            (Op::Kernel, 10000, 14500, 7, 42, 1, 0),
            (Op::Memcpy, 20000, 22250, 7, 43, 1, 1 << 20),
            (Op::Memset, 30000, 30001, 7, 44, 1, 64),
        ]
    );
    assert_eq!((a[0].grid, a[0].block, a[0].shared_mem), ([2, 3, 4], [128, 1, 1], 256));
    assert_eq!(a[0].name.as_deref(), Some("_Z3fooPf"));
    assert!(std::sync::Arc::ptr_eq(a[0].name.as_ref().unwrap(), a[1].name.as_ref().unwrap()), "one name, interned");
    assert_eq!(a[2].copy_kind, 1);
    assert_eq!(tracer_cupti::records::copy_kind(a[2].copy_kind), ("memcpy_htod", "h2d"));
    // Nothing more, and the drops were counted once.
    let again = c.take();
    assert!(again.activities.is_empty());
    assert_eq!(again.dropped, 0);
    // A second start is the running collector.
    assert_eq!(collect::start(None).unwrap().library(), lib.to_str().unwrap());
}
