//! `tracer record --check-coverage`: the trace's calls per driver function against
//! CUPTI's count of the same process's driver calls (tracer-cupti/src/driver_counts.rs).
//!
//! CUPTI sees a process's calls from the end of its first `cuInit` on (the injection is
//! loaded inside it), so the trace side counts each process's call lines after its first
//! `cuInit` line; functions outside tracer's table add the calls their counting probes
//! saw (entry_points.rs). Calls a process made after its last CUPTI callback (CUPTI's own
//! teardown at exit has unsubscribed by then) are set apart, not compared. A function is
//! `equal` when both counts are; functions tracer
//! leaves out on purpose (the state getters without `--all-functions`) are listed with
//! the reason; every other difference is listed as such.
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::Path;

use serde_json::{Value, json};

use crate::decode::fastline::Line;

/// Each process's latest calls kept to find those after CUPTI's last callback.
const RECENT: usize = 4096;

/// Call lines per function name, from each process's first cuInit on.
#[derive(Default)]
pub struct CallCounts {
    initialised: HashSet<u32>,
    after_init: BTreeMap<String, u64>,
    /// pid -> its latest calls (entry time, name), oldest first.
    recent: HashMap<u32, VecDeque<(u64, String)>>,
}

/// The trace's side of the comparison.
#[derive(Debug, Default, PartialEq)]
pub struct Traced {
    /// Calls per function CUPTI could have seen.
    pub calls: BTreeMap<String, u64>,
    /// Calls per function made after the process's last CUPTI callback (its teardown).
    pub after_cupti: BTreeMap<String, u64>,
}

impl CallCounts {
    pub fn observe(&mut self, line: &Line) {
        let (pid, ts, name): (u32, u64, std::borrow::Cow<str>) = match line {
            Line::Launch(l) => (l.hdr.pid, l.hdr.ts, l.name.into()),
            Line::Call(l) => (l.hdr.pid, l.hdr.ts, l.name().into()),
            Line::Value(v) => match (v["pid"].as_u64(), v["name"].as_str()) {
                (Some(p), Some(n)) if n.starts_with("cu") && v.get("type").is_some_and(|t| t != "count") => {
                    (p as u32, v["ts"].as_u64().unwrap_or(0), n.into())
                }
                _ => return,
            },
        };
        // The cuInit that loads the injection is not seen by CUPTI; later ones are.
        if name == "cuInit" && self.initialised.insert(pid) {
            return;
        }
        if self.initialised.contains(&pid) {
            *self.after_init.entry(name.to_string()).or_insert(0) += 1;
            let r = self.recent.entry(pid).or_default();
            if r.len() == RECENT {
                r.pop_front();
            }
            r.push_back((ts, name.into_owned()));
        }
    }

    /// The counts, split at each process's last CUPTI callback (`last_ns`; a process
    /// without one keeps all its calls on CUPTI's side).
    pub fn split(&self, last_ns: &BTreeMap<u32, u64>) -> Traced {
        let mut t = Traced { calls: self.after_init.clone(), after_cupti: BTreeMap::new() };
        for (pid, recent) in &self.recent {
            let Some(&last) = last_ns.get(pid) else { continue };
            for (_, name) in recent.iter().filter(|(ts, _)| *ts > last) {
                *t.after_cupti.entry(name.clone()).or_insert(0) += 1;
                if let Some(n) = t.calls.get_mut(name) {
                    *n -= 1;
                }
            }
        }
        t.calls.retain(|_, n| *n > 0);
        t
    }
}

/// CUPTI's side: calls per function, all processes together, and each process's last
/// callback time.
#[derive(Debug, Default, PartialEq)]
pub struct Cupti {
    pub calls: BTreeMap<String, u64>,
    pub last_ns: BTreeMap<u32, u64>,
}

/// CUPTI's counts from the file the processes appended to.
pub fn read_cupti(path: &Path) -> anyhow::Result<Cupti> {
    let text = tracer_format::open::read_to_string(path, tracer_format::open::Kind::Sidecar)?;
    let mut c = Cupti::default();
    for (i, l) in text.lines().enumerate() {
        let f: Vec<&str> = l.split('\t').collect();
        let pid: Option<u32> = f.first().and_then(|s| s.parse().ok());
        let n: Option<u64> = f.get(2).and_then(|s| s.parse().ok());
        match (f.len(), pid, n) {
            (3, Some(pid), Some(n)) if f[1] == tracer_cupti::driver_counts::LAST_CALLBACK => {
                c.last_ns.insert(pid, n);
            }
            (3, Some(_), Some(n)) => *c.calls.entry(f[1].to_string()).or_insert(0) += n,
            _ => anyhow::bail!("{}:{}: not `pid<TAB>function<TAB>calls`: {l:?}", path.display(), i + 1),
        }
    }
    Ok(c)
}

/// Driver functions CUPTI gives no callback for, though they have a callback id (seen on
/// the GPU machine, CUPTI 13.0: cuGetExportTable 0 of 6-31 calls a run), and why.
pub fn cupti_silent(name: &str) -> Option<&'static str> {
    (name == "cuGetExportTable").then_some("CUPTI gives no callback for it (it hands out the driver's private tables)")
}

/// The comparison, function by function: the footer's `coverage` object and the lines
/// for stderr. `left_out`: why a function tracer does not record on purpose is left out.
pub fn compare(
    cupti: &BTreeMap<String, u64>,
    traced: &Traced,
    counted: &BTreeMap<String, u64>,
    left_out: &dyn Fn(&str) -> Option<&'static str>,
) -> (Value, Vec<String>) {
    let (after_cupti, traced) = (&traced.after_cupti, &traced.calls);
    let names: std::collections::BTreeSet<&String> = cupti.keys().chain(traced.keys()).chain(counted.keys()).collect();
    let (mut equal, mut differ, mut on_purpose) = (Vec::new(), Vec::new(), Vec::new());
    for name in names {
        let c = cupti.get(name).copied().unwrap_or(0);
        let (t, k) = (traced.get(name).copied().unwrap_or(0), counted.get(name).copied().unwrap_or(0));
        let row = json!({ "function": name, "cupti": c, "recorded": t, "counted": k });
        if c == t + k {
            equal.push(row);
        } else if let Some(why) = left_out(name).filter(|_| t + k == 0 || c == 0) {
            let mut row = row;
            row["reason"] = json!(why);
            on_purpose.push(row);
        } else {
            differ.push(row);
        }
    }
    let teardown: u64 = after_cupti.values().sum();
    let mut lines = vec![format!(
        "coverage (CUPTI driver callbacks): {} functions called, {} with equal counts, {} differ, {} left out on purpose{}",
        equal.len() + differ.len() + on_purpose.len(),
        equal.len(),
        differ.len(),
        on_purpose.len(),
        if teardown > 0 {
            format!("; {teardown} recorded calls came after CUPTI's last callback (process teardown), not compared")
        } else {
            String::new()
        }
    )];
    if !differ.is_empty() {
        lines.push(format!("  {:<48} {:>10} {:>10} {:>10}", "function", "CUPTI", "recorded", "counted"));
        for r in &differ {
            lines.push(format!(
                "  {:<48} {:>10} {:>10} {:>10}",
                r["function"].as_str().unwrap_or(""),
                r["cupti"],
                r["recorded"],
                r["counted"]
            ));
        }
    }
    let footer = json!({
        "functions": equal.len() + differ.len() + on_purpose.len(),
        "equal": equal,
        "differ": differ,
        "left_out": on_purpose,
        // Recorded calls made after the process's last CUPTI callback: CUPTI's own
        // teardown has unsubscribed by then (the runtime's cuLibraryUnload,
        // cuDevicePrimaryCtxRelease at exit).
        "after_cupti_stopped": after_cupti,
    });
    (footer, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(v: &[(&str, u64)]) -> BTreeMap<String, u64> {
        v.iter().map(|(n, c)| (n.to_string(), *c)).collect()
    }

    #[test]
    fn counts_are_compared_function_by_function() {
        let cupti = m(&[
            ("cuLaunchKernel_ptsz", 1000),
            ("cuCtxSynchronize_v2", 100),
            ("cuStreamGetId", 7),
            ("cuCtxGetCurrent", 5),
            ("cuMemcpyBatchAsync_v2", 2),
        ]);
        let traced = Traced {
            calls: m(&[("cuLaunchKernel_ptsz", 1000), ("cuCtxSynchronize_v2", 99)]),
            after_cupti: m(&[("cuLibraryUnload", 2)]),
        };
        let counted = m(&[("cuStreamGetId", 7)]);
        let left_out = |n: &str| (n == "cuCtxGetCurrent").then_some("a state getter");
        let (f, lines) = compare(&cupti, &traced, &counted, &left_out);
        assert_eq!(f["functions"], 5);
        let names = |k: &str| {
            f[k].as_array().unwrap().iter().map(|r| r["function"].as_str().unwrap().to_string()).collect::<Vec<_>>()
        };
        assert_eq!(names("equal"), ["cuLaunchKernel_ptsz", "cuStreamGetId"]);
        assert_eq!(names("differ"), ["cuCtxSynchronize_v2", "cuMemcpyBatchAsync_v2"]);
        assert_eq!(names("left_out"), ["cuCtxGetCurrent"]);
        assert_eq!(f["left_out"][0]["reason"], "a state getter");
        assert_eq!(
            lines[0],
            "coverage (CUPTI driver callbacks): 5 functions called, 2 with equal counts, 2 differ, 1 left out on purpose; \
             2 recorded calls came after CUPTI's last callback (process teardown), not compared"
        );
        assert_eq!(f["after_cupti_stopped"], json!({"cuLibraryUnload": 2}));
        assert!(
            lines[2].contains("cuCtxSynchronize_v2") && lines[2].contains("100") && lines[2].contains("99"),
            "{}",
            lines[2]
        );
    }

    #[test]
    fn calls_before_the_first_cuinit_of_a_process_are_not_counted() {
        let mut c = CallCounts::default();
        let l =
            |pid: u32, ts: u64, name: &str| Line::Value(json!({"pid": pid, "ts": ts, "name": name, "type": "init"}));
        for (pid, ts, name) in [
            (1, 1, "cuGetProcAddress_v2"),
            (1, 2, "cuInit"),
            (1, 3, "cuGetProcAddress_v2"),
            (2, 4, "cuDriverGetVersion"),
            (1, 5, "cuInit"),
            (2, 6, "cuInit"),
            (2, 7, "cuDriverGetVersion"),
            (2, 20, "cuLibraryUnload"),
            (1, 21, "cuLibraryUnload"),
        ] {
            c.observe(&l(pid, ts, name));
        }
        let all = m(&[("cuGetProcAddress_v2", 1), ("cuDriverGetVersion", 1), ("cuInit", 1), ("cuLibraryUnload", 2)]);
        assert_eq!(c.split(&BTreeMap::new()), Traced { calls: all.clone(), after_cupti: BTreeMap::new() });
        // Process 2's last callback at 10: its cuLibraryUnload came after.
        let t = c.split(&[(2, 10)].into_iter().collect());
        assert_eq!(t.after_cupti, m(&[("cuLibraryUnload", 1)]));
        assert_eq!(
            t.calls,
            m(&[("cuGetProcAddress_v2", 1), ("cuDriverGetVersion", 1), ("cuInit", 1), ("cuLibraryUnload", 1)])
        );
    }

    #[test]
    fn a_malformed_counts_file_is_named_with_its_line() {
        let p = std::env::temp_dir().join(format!("tracer-cov-{}", std::process::id()));
        std::fs::write(&p, "1\tcuInit\t1\n2\tcuLaunchKernel\t5\n2\tcuLaunchKernel\t5\n2\t#last_callback_ns\t99\n")
            .unwrap();
        let c = read_cupti(&p).unwrap();
        assert_eq!(c.calls, m(&[("cuInit", 1), ("cuLaunchKernel", 10)]));
        assert_eq!(c.last_ns, [(2, 99)].into_iter().collect());
        std::fs::write(&p, "1\tcuInit\t1\n1 cuInit x\n").unwrap();
        let e = read_cupti(&p).unwrap_err().to_string();
        std::fs::remove_file(&p).unwrap();
        assert!(e.contains(":2: not `pid<TAB>function<TAB>calls`"), "{e}");
    }
}
