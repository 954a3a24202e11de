//! Which CUPTI record measured which replayed op.
//!
//! Work submitted to one stream runs in submission order, so within a pass
//! the records of one CUPTI stream, sorted by start, are the ops submitted
//! to one replay stream, in order. CUPTI names streams by its own ids, so
//! each stream's records are paired with the replay stream whose ops have the
//! same sequence of kinds (kernel, copy, set) and kernel names. A pass whose
//! records cannot all be paired that way is reported, not guessed at.
//!
//! A pass that launches rebuilt graphs (exec/graph_execs.rs) is paired by
//! correlation id instead: the nodes of a graph's branches run on streams of
//! the driver's choosing, but every record of one graph launch carries the
//! correlation id of its `cuGraphLaunch`, and correlation ids follow the
//! order of the calls. So the records grouped by correlation id, in id
//! order, are the pass's units in submission order: an op submitted alone,
//! or a graph launch with all its ops. Within a graph launch, records of
//! the same kind and kernel name pair with its ops in start order.

use std::collections::BTreeMap;

use super::{Activity, Op};

/// One op as submitted in a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    /// Plan op index.
    pub op: usize,
    /// The replay stream it went to (any value naming the stream: the CUstream).
    pub stream: u64,
    pub kind: Op,
    /// Launches: the kernel's (mangled) name.
    pub kernel: Option<String>,
    /// Ops a rebuilt graph launch runs: its first op (all its ops share it).
    pub graph: Option<usize>,
}

fn same(s: &Submitted, a: &Activity) -> bool {
    s.kind == a.op
        && match (&s.kernel, &a.name) {
            (Some(k), Some(n)) => k.as_str() == &**n,
            _ => true,
        }
}

fn describe(acts: &[&Activity]) -> String {
    let n = |op| acts.iter().filter(|a| a.op == op).count();
    format!("{} kernels, {} copies, {} sets", n(Op::Kernel), n(Op::Memcpy), n(Op::Memset))
}

fn describe_ops(ops: &[&Submitted]) -> String {
    let n = |op| ops.iter().filter(|s| s.kind == op).count();
    format!("{} kernels, {} copies, {} sets", n(Op::Kernel), n(Op::Memcpy), n(Op::Memset))
}

/// Pairs every record of a pass with its op: `(op, index in acts)`, sorted
/// by op. `acts`: the pass's records; `sub`: the ops the pass submitted, in
/// submission order.
pub fn match_ops(sub: &[Submitted], acts: &[Activity]) -> Result<Vec<(usize, usize)>, String> {
    // Replay streams in order of first use, each with its ops in order.
    let mut by_stream: Vec<(u64, Vec<&Submitted>)> = Vec::new();
    for s in sub {
        match by_stream.iter_mut().find(|x| x.0 == s.stream) {
            Some(x) => x.1.push(s),
            None => by_stream.push((s.stream, vec![s])),
        }
    }
    let mut cupti: BTreeMap<u32, Vec<(usize, &Activity)>> = BTreeMap::new();
    for (i, a) in acts.iter().enumerate() {
        cupti.entry(a.stream).or_default().push((i, a));
    }
    let mut taken = vec![false; by_stream.len()];
    let mut pairs = Vec::with_capacity(acts.len());
    for (id, recs) in cupti.iter_mut() {
        recs.sort_by_key(|(i, a)| (a.start, a.end, *i));
        let fits = |ops: &Vec<&Submitted>| {
            ops.len() == recs.len() && ops.iter().zip(recs.iter()).all(|(s, (_, a))| same(s, a))
        };
        let Some(k) = (0..by_stream.len()).find(|&k| !taken[k] && fits(&by_stream[k].1)) else {
            let rs: Vec<&Activity> = recs.iter().map(|x| x.1).collect();
            let streams: Vec<String> =
                by_stream.iter().zip(&taken).filter(|(_, t)| !**t).map(|((_, ops), _)| describe_ops(ops)).collect();
            return Err(format!(
                "CUPTI stream {id}: {} records ({}) match no replayed stream's ops (unpaired replayed streams: {})",
                recs.len(),
                describe(&rs),
                if streams.is_empty() { "none".into() } else { streams.join("; ") }
            ));
        };
        taken[k] = true;
        pairs.extend(by_stream[k].1.iter().zip(recs.iter()).map(|(s, (i, _))| (s.op, *i)));
    }
    if let Some(k) = (0..by_stream.len()).find(|&k| !taken[k]) {
        return Err(format!(
            "no CUPTI records for a replayed stream of {} ops (first: plan op {})",
            by_stream[k].1.len(),
            by_stream[k].1[0].op
        ));
    }
    pairs.sort_unstable();
    Ok(pairs)
}

/// Pairs a pass that launched rebuilt graphs, by correlation id (module doc).
pub fn match_by_correlation(sub: &[Submitted], acts: &[Activity]) -> Result<Vec<(usize, usize)>, String> {
    // Units in submission order: an op alone, or the ops of one graph launch.
    let mut units: Vec<Vec<&Submitted>> = Vec::new();
    for s in sub {
        match (s.graph, units.last_mut()) {
            (Some(g), Some(u)) if u[0].graph == Some(g) => u.push(s),
            _ => units.push(vec![s]),
        }
    }
    let mut groups: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, a) in acts.iter().enumerate() {
        groups.entry(a.correlation).or_default().push(i);
    }
    if groups.len() != units.len() {
        return Err(format!(
            "{} correlation ids in the records, {} ops and graph launches submitted",
            groups.len(),
            units.len()
        ));
    }
    let mut pairs = Vec::with_capacity(acts.len());
    for (unit, (corr, recs)) in units.iter().zip(groups.iter_mut()) {
        recs.sort_by_key(|&i| (acts[i].start, acts[i].end, i));
        let mut free: Vec<Option<usize>> = recs.iter().map(|&i| Some(i)).collect();
        for s in unit {
            let Some(slot) = free.iter_mut().find(|r| r.is_some_and(|i| same(s, &acts[i]))) else {
                let rs: Vec<&Activity> = recs.iter().map(|&i| &acts[i]).collect();
                return Err(format!(
                    "correlation id {corr}: records ({}) do not match the ops submitted in its place ({}, first: plan op {})",
                    describe(&rs),
                    describe_ops(unit),
                    unit[0].op
                ));
            };
            pairs.push((s.op, slot.take().expect("found a record")));
        }
        if free.iter().any(Option::is_some) {
            return Err(format!("correlation id {corr}: more records than ops (plan op {})", unit[0].op));
        }
    }
    pairs.sort_unstable();
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::super::tests::act;
    use super::*;

    fn sub(op: usize, stream: u64, kind: Op, kernel: Option<&str>) -> Submitted {
        Submitted { op, stream, kind, kernel: kernel.map(str::to_owned), graph: None }
    }

    #[test]
    fn a_rebuilt_graph_launch_pairs_by_correlation_whatever_streams_its_branches_ran_on() {
        // op 0 alone; ops 1..=3 one graph launch (kernels a, b, a; the branch with b on stream 21);
        // op 4 alone.
        let mut s = vec![
            sub(0, 0xA, Op::Memcpy, None),
            sub(1, 0xA, Op::Kernel, Some("a")),
            sub(2, 0xA, Op::Kernel, Some("b")),
            sub(3, 0xA, Op::Kernel, Some("a")),
            sub(4, 0xA, Op::Memset, None),
        ];
        for x in &mut s[1..4] {
            x.graph = Some(1);
        }
        let with = |mut a: Activity, corr: u32| {
            a.correlation = corr;
            a
        };
        let a = vec![
            with(act(Op::Kernel, 300, 310, 20, Some("a")), 9), // 0: the graph's second a
            with(act(Op::Memcpy, 100, 150, 7, None), 5),       // 1
            with(act(Op::Kernel, 160, 170, 21, Some("b")), 9), // 2
            with(act(Op::Kernel, 155, 158, 20, Some("a")), 9), // 3: the graph's first a
            with(act(Op::Memset, 400, 401, 7, None), 12),      // 4
        ];
        assert_eq!(match_by_correlation(&s, &a).unwrap(), vec![(0, 1), (1, 3), (2, 2), (3, 0), (4, 4)]);
        // By stream these records pair with nothing.
        assert!(match_ops(&s, &a).is_err());
        // A record missing from the graph launch is an error, not a guess.
        let short: Vec<Activity> = a.iter().enumerate().filter(|(i, _)| *i != 2).map(|(_, x)| x.clone()).collect();
        assert_eq!(
            match_by_correlation(&s, &short).unwrap_err(),
            "correlation id 9: records (2 kernels, 0 copies, 0 sets) do not match the ops submitted in its place (3 kernels, 0 copies, 0 sets, first: plan op 1)"
        );
    }

    #[test]
    fn records_pair_with_ops_per_stream() {
        // Two replay streams (0xA: copy, kernel a, set; 0xB: kernel b, kernel a),
        // CUPTI ids 13 and 7, records delivered out of order.
        let s = vec![
            sub(3, 0xA, Op::Memcpy, None),
            sub(4, 0xB, Op::Kernel, Some("b")),
            sub(5, 0xA, Op::Kernel, Some("a")),
            sub(8, 0xB, Op::Kernel, Some("a")),
            sub(9, 0xA, Op::Memset, None),
        ];
        let a = vec![
            act(Op::Kernel, 300, 310, 13, Some("a")), // 0
            act(Op::Memcpy, 100, 150, 7, None),       // 1
            act(Op::Kernel, 120, 200, 13, Some("b")), // 2
            act(Op::Memset, 400, 401, 7, None),       // 3
            act(Op::Kernel, 160, 170, 7, Some("a")),  // 4
        ];
        assert_eq!(match_ops(&s, &a).unwrap(), vec![(3, 1), (4, 2), (5, 4), (8, 0), (9, 3)]);
    }

    #[test]
    fn a_missing_record_is_an_error_not_a_guess() {
        let s = vec![sub(0, 0xA, Op::Kernel, Some("a")), sub(1, 0xA, Op::Kernel, Some("b"))];
        let a = vec![act(Op::Kernel, 100, 110, 7, Some("a"))];
        assert_eq!(
            match_ops(&s, &a).unwrap_err(),
            "CUPTI stream 7: 1 records (1 kernels, 0 copies, 0 sets) match no replayed stream's ops \
             (unpaired replayed streams: 2 kernels, 0 copies, 0 sets)"
        );
        // A different kernel name in the same place does not pair either.
        let a = vec![act(Op::Kernel, 100, 110, 7, Some("a")), act(Op::Kernel, 120, 130, 7, Some("c"))];
        assert!(match_ops(&s, &a).is_err());
        // Records for one stream, none for the other.
        let s2 = vec![sub(0, 0xA, Op::Kernel, Some("a")), sub(1, 0xB, Op::Memset, None)];
        assert_eq!(
            match_ops(&s2, &a[..1]).unwrap_err(),
            "no CUPTI records for a replayed stream of 1 ops (first: plan op 1)"
        );
    }
}
