//! `tracer record --check-coverage`: the trace's calls per driver function against
//! CUPTI's count of the same process's driver calls (tracer-cupti/src/driver_counts.rs).
//!
//! CUPTI sees a process's calls from the end of its first `cuInit` on (the injection is
//! loaded inside it), so the trace side counts each process's call lines after its first
//! `cuInit` line; functions outside tracer's table add the calls their counting probes
//! saw (entry_points.rs). A function is `equal` when both counts are; functions tracer
//! leaves out on purpose (the state getters without `--all-functions`) are listed with
//! the reason; every other difference is listed as such.
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde_json::{Value, json};

use crate::decode::fastline::Line;

/// Call lines per function name, from each process's first cuInit on.
#[derive(Default)]
pub struct CallCounts {
    initialised: HashSet<u32>,
    pub after_init: BTreeMap<String, u64>,
}

impl CallCounts {
    pub fn observe(&mut self, line: &Line) {
        let (pid, name): (u32, std::borrow::Cow<str>) = match line {
            Line::Launch(l) => (l.hdr.pid, l.name.into()),
            Line::Call(l) => (l.hdr.pid, l.name().into()),
            Line::Value(v) => match (v["pid"].as_u64(), v["name"].as_str()) {
                (Some(p), Some(n)) if n.starts_with("cu") && v.get("type").is_some_and(|t| t != "count") => {
                    (p as u32, n.into())
                }
                _ => return,
            },
        };
        // The cuInit that loads the injection is not seen by CUPTI; later ones are.
        if name == "cuInit" && self.initialised.insert(pid) {
            return;
        }
        if self.initialised.contains(&pid) {
            *self.after_init.entry(name.into_owned()).or_insert(0) += 1;
        }
    }
}

/// CUPTI's counts from the file the processes appended to: calls per function, all
/// processes together.
pub fn read_cupti(path: &Path) -> anyhow::Result<BTreeMap<String, u64>> {
    use anyhow::Context as _;
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut m = BTreeMap::new();
    for (i, l) in text.lines().enumerate() {
        let f: Vec<&str> = l.split('\t').collect();
        let n: Option<u64> = f.get(2).and_then(|s| s.parse().ok());
        match (f.len(), n) {
            (3, Some(n)) => *m.entry(f[1].to_string()).or_insert(0) += n,
            _ => anyhow::bail!("{}:{}: not `pid<TAB>function<TAB>calls`: {l:?}", path.display(), i + 1),
        }
    }
    Ok(m)
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
    traced: &BTreeMap<String, u64>,
    counted: &BTreeMap<String, u64>,
    left_out: &dyn Fn(&str) -> Option<&'static str>,
) -> (Value, Vec<String>) {
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
    let mut lines = vec![format!(
        "coverage (CUPTI driver callbacks): {} functions called, {} with equal counts, {} differ, {} left out on purpose",
        equal.len() + differ.len() + on_purpose.len(),
        equal.len(),
        differ.len(),
        on_purpose.len()
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
        let cupti = m(&[("cuLaunchKernel_ptsz", 1000), ("cuCtxSynchronize_v2", 100), ("cuStreamGetId", 7), ("cuCtxGetCurrent", 5), ("cuMemcpyBatchAsync_v2", 2)]);
        let traced = m(&[("cuLaunchKernel_ptsz", 1000), ("cuCtxSynchronize_v2", 99)]);
        let counted = m(&[("cuStreamGetId", 7)]);
        let left_out = |n: &str| (n == "cuCtxGetCurrent").then_some("a state getter");
        let (f, lines) = compare(&cupti, &traced, &counted, &left_out);
        assert_eq!(f["functions"], 5);
        let names = |k: &str| f[k].as_array().unwrap().iter().map(|r| r["function"].as_str().unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(names("equal"), ["cuLaunchKernel_ptsz", "cuStreamGetId"]);
        assert_eq!(names("differ"), ["cuCtxSynchronize_v2", "cuMemcpyBatchAsync_v2"]);
        assert_eq!(names("left_out"), ["cuCtxGetCurrent"]);
        assert_eq!(f["left_out"][0]["reason"], "a state getter");
        assert_eq!(lines[0], "coverage (CUPTI driver callbacks): 5 functions called, 2 with equal counts, 2 differ, 1 left out on purpose");
        assert!(lines[2].contains("cuCtxSynchronize_v2") && lines[2].contains("100") && lines[2].contains("99"), "{}", lines[2]);
    }

    #[test]
    fn calls_before_the_first_cuinit_of_a_process_are_not_counted() {
        let mut c = CallCounts::default();
        let l = |pid: u32, name: &str| Line::Value(json!({"pid": pid, "name": name, "type": "init"}));
        for (pid, name) in [(1, "cuGetProcAddress_v2"), (1, "cuInit"), (1, "cuGetProcAddress_v2"), (2, "cuDriverGetVersion"), (1, "cuInit"), (2, "cuInit"), (2, "cuDriverGetVersion")] {
            c.observe(&l(pid, name));
        }
        assert_eq!(c.after_init, m(&[("cuGetProcAddress_v2", 1), ("cuDriverGetVersion", 1), ("cuInit", 1)]));
    }

    #[test]
    fn a_malformed_counts_file_is_named_with_its_line() {
        let p = std::env::temp_dir().join(format!("tracer-cov-{}", std::process::id()));
        std::fs::write(&p, "1\tcuInit\t1\n2\tcuLaunchKernel\t5\n2\tcuLaunchKernel\t5\n").unwrap();
        assert_eq!(read_cupti(&p).unwrap(), m(&[("cuInit", 1), ("cuLaunchKernel", 10)]));
        std::fs::write(&p, "1\tcuInit\t1\n1 cuInit x\n").unwrap();
        let e = read_cupti(&p).unwrap_err().to_string();
        std::fs::remove_file(&p).unwrap();
        assert!(e.contains(":2: not `pid<TAB>function<TAB>calls`"), "{e}");
    }
}
