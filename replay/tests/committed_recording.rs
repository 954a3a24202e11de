//! The planner on traces/replay_check.rec: a real recording made on the H100
//! by `tracer record --replayable --capture-data --gpu-timestamps` of
//! examples/replay_check (2^16 elements; scripts/replay-e2e/small.sh), whose
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
