//! The planner on a recording made of the committed H100 trace of
//! examples/transformer_inference.py (recorded before --replayable: no
//! images, no params).

mod common;

use replay::plan;
use replay::recording::Recording;

#[test]
fn transformer_inference_plan() {
    let dir = tempfile::tempdir().unwrap();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/transformer_inference.jsonl.gz");
    std::fs::copy(&src, dir.path().join("trace.jsonl.gz")).unwrap();
    std::fs::write(
        dir.path().join("manifest.json"),
        r#"{"format": "tracer-recording", "schema_version": 1, "trace": "trace.jsonl.gz", "images": []}"#,
    )
    .unwrap();
    let rec = Recording::open(dir.path()).unwrap();
    let p = plan::build(&rec.manifest, &rec.trace, "trace.jsonl.gz").unwrap();
    let c = &p.coverage;
    assert_eq!(c.launches, 22758);
    assert_eq!(c.launches_by_api.get("cuLaunchKernel"), Some(&16998));
    assert_eq!(c.launches_by_api.get("cuLaunchKernelEx"), Some(&5760));
    assert_eq!(c.launches_replayed, 0);
    assert_eq!(c.percent(), 0.0);
    assert_eq!(c.skipped_by_reason.len(), 1);
    assert_eq!(c.skipped_by_reason.get("no params recorded"), Some(&22758));
    assert_eq!(c.skipped.len(), 22758);
    // 736 d2d + 168 d2h + 160 h2d copies, 50 memsets (footer's calls_by_function).
    assert_eq!((c.copies, c.copies_replayed, c.h2d_filled, c.h2d_with_data), (1064, 1064, 160, 0));
    assert_eq!((c.sets, c.sets_replayed), (50, 50));
    // The 160 H2D copies read pageable memory; the 168 D2H copies write the cuMemHostAlloc'd buffers.
    assert_eq!(c.host_pageable, 160);
    assert_eq!(p.loads.len(), 65); // 63 cuLibraryLoadData + 2 cuModuleLoadData
    assert!(p.loads.iter().all(|l| l.image.is_none()));
    // 1064 copies + 50 sets + 328 cuStreamSynchronize; the 1930 cuKernelSetAttribute and
    // 4 cuFuncSetAttribute concern kernels whose images were not captured.
    assert_eq!(p.ops.len(), 1442);
    let attr = "attribute of a kernel whose image was not captured";
    assert_eq!(c.other_skipped.iter().filter(|s| s.reason == attr).count(), 1934);
    assert_eq!(c.other_skipped.len(), 1934);
    assert_eq!(p.ops.iter().filter(|o| o.is_work()).count(), 1114);
    assert_eq!(p.edges.len(), 1113);
    assert_eq!(p.ranges.iter().filter(|r| r.needs_device_memory()).count(), 19);
    assert!(p.relocations.is_empty());
    println!("{}", p.summary());
}
