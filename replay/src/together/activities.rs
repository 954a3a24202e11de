//! `replay --together --activities FILE`: every run's GPU activity per
//! tenant, in the trace's line form, so the scripts that read a traced real
//! run read the replayed one too (experiments/colocation/sync_waits.py: how often each
//! tenant loses the GPU in a run). Each pass is a phase `served NAME K` of
//! its tenant (pid = tenant number, from 1) closed by `between` at its end;
//! its CUPTI busy intervals (merged) are `gpu` lines.

use serde_json::{Value, json};

use super::measure::RunResult;

/// The lines, in time order per pass: the phase marker, the busy intervals, `between`.
/// `names`: each tenant's workload name.
pub fn lines(runs: &[RunResult], names: &[String]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut served = vec![0usize; names.len()];
    for r in runs {
        for (t, p) in &r.passes {
            served[*t] += 1;
            let pid = *t + 1;
            let label = format!("served {} {}", names[*t], served[*t]);
            out.push(json!({"type": "marker", "op": "phase", "label": label, "pid": pid, "ts": p.t0_ns}));
            for &(s, e) in p.busy.iter().flatten() {
                out.push(json!({"type": "gpu", "op": "busy", "pid": pid, "ts": s,
                                "duration_us": (e - s) as f64 / 1e3}));
            }
            out.push(json!({"type": "marker", "op": "phase", "label": "between", "pid": pid, "ts": p.t1_ns}));
        }
    }
    out
}

/// A tenant's workload name: its recording's file name without `.rec`.
pub fn name(recording: &str) -> String {
    let base = recording.trim_end_matches('/').rsplit('/').next().unwrap_or(recording);
    base.strip_suffix(".rec").unwrap_or(base).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::together::Run;
    use crate::together::measure::Pass;

    #[test]
    fn passes_become_phases_with_their_busy_intervals() {
        let pass = |t0, t1, busy: &[(u64, u64)]| Pass { wall_ms: 0.0, t0_ns: t0, t1_ns: t1, busy: Some(busy.to_vec()) };
        let runs = vec![
            RunResult { run: Run::Alone(0), passes: vec![(0, pass(100, 200, &[(110, 120)]))], energy_mj: None },
            RunResult {
                run: Run::Together,
                passes: vec![(0, pass(300, 400, &[(310, 330)])), (1, pass(300, 380, &[(331, 1331)]))],
                energy_mj: None,
            },
        ];
        let names = vec![name("/tmp/coloc/gen.rec"), name("batch.rec/")];
        let got: Vec<String> = lines(&runs, &names).iter().map(|l| l.to_string()).collect();
        let want = [
            r#"{"label":"served gen 1","op":"phase","pid":1,"ts":100,"type":"marker"}"#,
            r#"{"duration_us":0.01,"op":"busy","pid":1,"ts":110,"type":"gpu"}"#,
            r#"{"label":"between","op":"phase","pid":1,"ts":200,"type":"marker"}"#,
            r#"{"label":"served gen 2","op":"phase","pid":1,"ts":300,"type":"marker"}"#,
            r#"{"duration_us":0.02,"op":"busy","pid":1,"ts":310,"type":"gpu"}"#,
            r#"{"label":"between","op":"phase","pid":1,"ts":400,"type":"marker"}"#,
            r#"{"label":"served batch 1","op":"phase","pid":2,"ts":300,"type":"marker"}"#,
            r#"{"duration_us":1.0,"op":"busy","pid":2,"ts":331,"type":"gpu"}"#,
            r#"{"label":"between","op":"phase","pid":2,"ts":380,"type":"marker"}"#,
        ];
        assert_eq!(got, want);
    }
}
