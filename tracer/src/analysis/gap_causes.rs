//! The main cause of every idle gap of a scope (`tracer gaps` attributes
//! only the long ones): what the scope's processes were doing for the
//! largest part of the gap, by the priorities of [`gaps::attribute`].
use std::collections::BTreeMap;

use super::gaps::{self, CAUSES, ScopeReport};
use super::model::Trace;

/// One of [`CAUSES`] per gap of `s.gaps`; `first_work` from [`gaps::first_work`].
pub fn main_causes(t: &Trace, s: &ScopeReport, first_work: &BTreeMap<u32, u64>) -> Vec<&'static str> {
    let acts = gaps::activities(t, &s.pids, first_work);
    gaps::attribute(&s.gaps, &acts)
        .iter()
        .map(|ns| {
            // the first of the largest: ties go to the higher-priority cause
            let i = (0..CAUSES.len()).fold(0, |best, i| if ns[i] > ns[best] { i } else { best });
            CAUSES[i]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{phases, timeline};

    #[test]
    fn allocation_then_nothing_in_flight() {
        // Launches at 1, 5 and 8 ms, each followed by a stream sync returning
        // at 3, 6 and 9 ms: the bound timeline has gaps 3-5 ms and 6-8 ms. In
        // the first a cuMemAlloc runs 3.2-4.6 ms (1.4 of 2 ms), in the second
        // no driver call is in flight.
        let launch = |ts: u64| {
            format!(
                r#"{{"ts":{ts},"pid":1,"tid":1,"type":"kernel","op":"launch","name":"cuLaunchKernel","kernel":"k","grid":[1,1,1],"block":[32,1,1],"stream":"0x0","duration_us":10,"ret":0}}"#
            )
        };
        let sync = |ts: u64, until: u64| {
            format!(
                r#"{{"ts":{ts},"pid":1,"tid":1,"type":"stream","op":"stream_synchronize","name":"cuStreamSynchronize","stream":"0x0","duration_us":{},"ret":0}}"#,
                (until - ts) / 1000
            )
        };
        let alloc = r#"{"ts":3200000,"pid":1,"tid":1,"type":"memory","op":"alloc","name":"cuMemAlloc_v2","size":64,"duration_us":1400,"ret":0}"#;
        let lines = [
            r#"{"type":"header","pid":1,"command":["app"]}"#.to_string(),
            launch(1_000_000),
            sync(1_100_000, 3_000_000),
            alloc.to_string(),
            launch(5_000_000),
            sync(5_100_000, 6_000_000),
            launch(8_000_000),
            sync(8_100_000, 9_000_000),
        ];
        let t = crate::analysis::model::parse_str("t", &lines.join("\n")).unwrap();
        let tl = timeline::bound(&t);
        let r = gaps::analyze(&t, &tl, &phases::phases(&t), &gaps::GapOptions::default());
        let s = &r.scopes[0];
        assert_eq!(s.gaps, vec![(3_000_000, 5_000_000), (6_000_000, 8_000_000)]);
        assert_eq!(main_causes(&t, s, &gaps::first_work(&t, &tl)), vec!["allocation", "cpu_between_calls"]);
    }
}
