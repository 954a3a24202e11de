//! The planner on traces/replay_check.rec: a real recording made on the H100
//! by `tracer record --replayable --capture-data --gpu-timestamps` of
//! examples/replay_check (2^16 elements; experiments/replay/replay-e2e/small.sh), whose
//! replay there gave the recorded outputs bit for bit
//! (docs/replay/e2e_2026-11-22/small.log).

use replay::plan::{self, EdgeKind};
use replay::recording::Recording;

#[test]
fn replay_check_recording_plans_completely() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/replay_check.rec");
    let rec = Recording::open(&dir).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl").unwrap();
    // Every image and data file is there with its hash.
    replay::data_check::check(&rec, &p).unwrap();
    let c = &p.coverage;
    assert_eq!((c.launches, c.launches_replayed), (5, 5));
    assert_eq!(c.launches_by_api.get("cuLaunchKernel"), Some(&4));
    assert_eq!(c.launches_by_api.get("cuLaunchKernelEx"), Some(&1));
    assert!(c.skipped.is_empty() && c.skipped_by_reason.is_empty());
    // One H2D (its bytes recorded), two D2H (their bytes recorded for the output check), one memset.
    assert_eq!((c.copies, c.copies_replayed, c.h2d_with_data, c.h2d_filled), (3, 3, 1, 0));
    assert_eq!((c.sets, c.sets_replayed), (1, 1));
    assert_eq!(p.loads.len(), 1);
    assert!(p.loads[0].image.is_some());
    assert_eq!((p.ops.len(), p.streams.len(), p.events.len()), (33, 3, 20));
    assert_eq!(p.ops.iter().filter(|o| o.is_work()).count(), 9);
    let kinds = |k: EdgeKind| p.edges.iter().filter(|e| e.kind == k).count();
    assert_eq!((kinds(EdgeKind::Stream), kinds(EdgeKind::Event), kinds(EdgeKind::HostSync)), (6, 1, 2));
    assert_eq!(p.relocations.len(), 10);
    // The kernels' parameter bytes are exactly the layouts' sizes.
    for o in &p.ops {
        if let Some(l) = o.launch() {
            assert_eq!(l.params_len, l.params.len(), "{}", l.kernel);
            assert!(!l.params.is_empty(), "{}", l.kernel);
        }
    }
}

/// The same recording with its trace zstd-compressed (`tracer record
/// --replayable --compress zstd`): `trace.jsonl.zst`, named by the manifest,
/// gives the same trace and the same plan.
#[test]
fn replay_check_recording_compressed_with_zstd_plans_the_same() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/replay_check.rec");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("replay_check_zst.rec");
    for sub in ["images", "data"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        for e in std::fs::read_dir(src.join(sub)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), dir.join(sub).join(e.file_name())).unwrap();
        }
    }
    let text = std::fs::read(src.join("trace.jsonl")).unwrap();
    // Two frames, the first ended by a flush as tracer's writer does every 100 ms.
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    enc.include_checksum(true).unwrap();
    std::io::Write::write_all(&mut enc, &text[..text.len() / 2]).unwrap();
    std::io::Write::flush(&mut enc).unwrap();
    std::io::Write::write_all(&mut enc, &text[text.len() / 2..]).unwrap();
    std::fs::write(dir.join("trace.jsonl.zst"), enc.finish().unwrap()).unwrap();
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(src.join("manifest.json")).unwrap()).unwrap();
    m["trace"] = "trace.jsonl.zst".into();
    std::fs::write(dir.join("manifest.json"), serde_json::to_vec_pretty(&m).unwrap()).unwrap();

    let plain = Recording::open(&src).unwrap();
    let zst = Recording::open(&dir).unwrap();
    assert_eq!(zst.trace_path, dir.join("trace.jsonl.zst"));
    assert_eq!(zst.trace_name(), "trace.jsonl.zst");
    assert_eq!((zst.trace.lines, zst.trace.calls.len()), (plain.trace.lines, plain.trace.calls.len()));
    assert_eq!(zst.trace.gpu, plain.trace.gpu);
    assert_eq!(zst.trace.warnings, plain.trace.warnings);
    assert_eq!(zst.trace.header, plain.trace.header);
    assert_eq!(zst.trace.footer, plain.trace.footer);
    let a = plan::build(&plain.manifest, &plain.trace, "trace.jsonl").unwrap();
    let b = plan::build(&zst.manifest, &zst.trace, "trace.jsonl").unwrap();
    replay::data_check::check(&zst, &b).unwrap();
    assert_eq!(format!("{a:#?}"), format!("{b:#?}"));
    assert_eq!(b.coverage.launches_replayed, 5);
}
