//! Streams named by what they are, not by their handle: "legacy default",
//! "per-thread default", "NCCL" (the stream NCCL's kernels ran on),
//! "priority" (made by cuStreamCreateWithPriority), else "stream N" in the
//! order the process created (or first used) them. Pictures and the HTML
//! report label their rows with these; the handle stays in the JSON.
use std::collections::{BTreeMap, HashMap, HashSet};

use super::model::{Kind, NO_STR, Trace};
use super::timeline::{StreamKey, Timeline, WorkKind};

/// Whether a kernel name is one of NCCL's (`ncclDevKernel_…`, `ncclKernel_…`).
pub fn is_nccl(name: &str) -> bool {
    name.starts_with("nccl") || name.starts_with("_Z") && name.contains("nccl")
}

/// The name of every stream of `tl`, by key.
pub fn names(t: &Trace, tl: &Timeline) -> HashMap<StreamKey, String> {
    // streams made with a priority, and the order of creation per process
    let mut priority: HashSet<(u32, u64)> = HashSet::new();
    let mut order: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for c in t.calls.iter().filter(|c| c.kind == Kind::StreamCreate && !c.failed()) {
        if t.name(c.func).contains("Priority") {
            priority.insert((c.pid, c.obj));
        }
        let v = order.entry(c.pid).or_default();
        if !v.contains(&c.obj) {
            v.push(c.obj);
        }
    }
    // streams NCCL launched on (from the launch calls: bound timelines
    // have no kernel names)
    let mut nccl_streams: HashSet<(u32, u64)> = HashSet::new();
    let mut nccl_kernel: HashMap<u32, bool> = HashMap::new();
    for c in t.calls.iter().filter(|c| c.kind == Kind::Launch && c.kernel != NO_STR) {
        if *nccl_kernel.entry(c.kernel).or_insert_with(|| is_nccl(t.name(c.kernel))) {
            nccl_streams.insert((c.pid, c.stream));
        }
    }
    let mut out = HashMap::new();
    for s in &tl.streams {
        let k = s.key;
        let nccl = nccl_streams.contains(&(k.pid, k.handle))
            || s.intervals
                .iter()
                .filter(|i| i.kind == WorkKind::Kernel && i.name != NO_STR)
                .take(64)
                .any(|i| is_nccl(t.name(i.name)));
        let name = if k.tid != 0 {
            format!("per-thread default (tid {})", k.tid)
        } else if k.handle == 0 {
            "legacy default".to_string()
        } else if nccl {
            "NCCL".to_string()
        } else {
            let v = order.entry(k.pid).or_default();
            let n = match v.iter().position(|&h| h == k.handle) {
                Some(i) => i + 1,
                None => {
                    v.push(k.handle);
                    v.len()
                }
            };
            if priority.contains(&(k.pid, k.handle)) { format!("priority stream {n}") } else { format!("stream {n}") }
        };
        out.insert(k, name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{model::parse_str, timeline};

    #[test]
    fn streams_by_role() {
        let create = |ts: u64, f: &str, h: &str| {
            format!(
                r#"{{"ts":{ts},"pid":1,"tid":1,"type":"stream","op":"stream_create","name":"{f}","args":{{"Flags":"0x1","phStream":"{h}"}},"duration_us":1.0,"ret":0}}"#
            )
        };
        let l = [
            create(10, "cuStreamCreate", "0x55"),
            create(20, "cuStreamCreateWithPriority", "0x66"),
            create(30, "cuStreamCreate", "0x77"),
            timeline::tests::launch(100, 1.0, "k", "0x0"),
            timeline::tests::launch(200, 1.0, "k", "0x55"),
            timeline::tests::launch(300, 1.0, "k", "0x66"),
            timeline::tests::launch(400, 1.0, "ncclDevKernel_AllReduce_Sum_f16_RING_LL", "0x77"),
            timeline::tests::launch(500, 1.0, "k", "0x99"),
        ];
        let t = parse_str("s", &l.join("\n")).unwrap();
        let tl = timeline::bound(&t);
        let n = names(&t, &tl);
        let mut v: Vec<(u64, &str)> = n.iter().map(|(k, s)| (k.handle, s.as_str())).collect();
        v.sort();
        assert_eq!(
            v,
            [
                (0, "legacy default"),
                (0x55, "stream 1"),
                (0x66, "priority stream 2"),
                (0x77, "NCCL"),
                (0x99, "stream 4")
            ]
        );
    }
}
