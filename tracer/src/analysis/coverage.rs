//! How much of a run a calibration covers: the kernel launches of the
//! inferred timeline that had no entry in the durations file (not even by
//! name), as a share of the launches and of the estimated kernel time. Such
//! kernels are never given zero: the inference times them with the median of
//! all calibrated kernels (2 µs if the file has none), and this says how much
//! of the timeline rests on that guess.
use std::collections::HashMap;

use serde::Serialize;

use super::stats::fmt_ns;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct MissingKernel {
    /// Kernel name ("(graph launch)" for cuGraphLaunch, "(unnamed handle)" without a name).
    pub kernel: String,
    pub launches: u64,
    /// Time the inference gave these launches (the fallback duration each).
    pub estimated_ns: u64,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct CalibrationCoverage {
    /// Kernel and graph launches timed by the inference.
    pub kernel_launches: u64,
    /// Their estimated time (durations as assigned, before cuts at synchronizations).
    pub kernel_ns: u64,
    /// Launches of kernels the calibration does not know.
    pub missing_launches: u64,
    pub missing_ns: u64,
    /// The duration each of them was given.
    pub fallback_ns: u64,
    /// Per missing kernel, most launches first.
    pub missing_kernels: Vec<MissingKernel>,
    /// Launches timed from the durations that supplement the calibration
    /// (those of the durations library beside a run's measured windows:
    /// sampled.rs), apart from the fallback ones above; their time; and the
    /// supplement's name ("the durations library (M entries)").
    #[serde(skip_serializing_if = "is_zero")]
    pub library_launches: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub library_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How the inference timed a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timed {
    /// From the calibration (or measured).
    Calibrated,
    /// From the durations supplementing the calibration (the library).
    Library,
    /// With the fallback: the calibration does not know the kernel.
    Fallback,
}

impl CalibrationCoverage {
    pub fn missing_launch_share(&self) -> f64 {
        if self.kernel_launches == 0 { 0.0 } else { self.missing_launches as f64 / self.kernel_launches as f64 }
    }
    pub fn missing_time_share(&self) -> f64 {
        if self.kernel_ns == 0 { 0.0 } else { self.missing_ns as f64 / self.kernel_ns as f64 }
    }

    /// One line for reports.
    pub fn sentence(&self) -> String {
        let library = match (self.library_launches, &self.library) {
            (0, _) => String::new(),
            (n, name) => format!(
                "; from {}: {n} launches ({})",
                name.as_deref().unwrap_or("the durations library"),
                fmt_ns(self.library_ns)
            ),
        };
        format!("{}{library}", self.missing_sentence())
    }

    fn missing_sentence(&self) -> String {
        if self.missing_launches == 0 {
            return format!(
                "calibration coverage: all {} kernel launches have a calibrated duration",
                self.kernel_launches
            );
        }
        let top: Vec<String> =
            self.missing_kernels.iter().take(3).map(|k| format!("{} ×{}", short(&k.kernel), k.launches)).collect();
        format!(
            "calibration coverage: {} of {} kernel launches ({:.1}%) of {} kernel(s) missing from the calibration, \
             timed at {} each (the median of the calibrated kernels): {} of {} estimated kernel time ({:.1}%); \
             most launched: {}",
            self.missing_launches,
            self.kernel_launches,
            100.0 * self.missing_launch_share(),
            self.missing_kernels.len(),
            fmt_ns(self.fallback_ns),
            fmt_ns(self.missing_ns),
            fmt_ns(self.kernel_ns),
            100.0 * self.missing_time_share(),
            top.join(", ")
        )
    }
}

fn short(name: &str) -> String {
    if name.chars().count() > 60 { format!("{}…", name.chars().take(60).collect::<String>()) } else { name.into() }
}

/// Collects the coverage while the inference times launches.
#[derive(Default)]
pub struct Tally {
    launches: u64,
    ns: u64,
    missing: HashMap<String, (u64, u64)>,
    fallback_ns: u64,
    library: (u64, u64),
}

impl Tally {
    /// A kernel or graph launch timed at `ns`, as `how` says.
    pub fn add(&mut self, name: &str, ns: u64, how: Timed) {
        self.launches += 1;
        self.ns += ns;
        if how == Timed::Library {
            self.library.0 += 1;
            self.library.1 += ns;
        }
        if how == Timed::Fallback {
            let e = self.missing.entry(name.to_string()).or_default();
            e.0 += 1;
            e.1 += ns;
            self.fallback_ns = ns;
        }
    }

    pub fn finish(self) -> CalibrationCoverage {
        let mut missing_kernels: Vec<MissingKernel> = self
            .missing
            .into_iter()
            .map(|(kernel, (launches, estimated_ns))| MissingKernel { kernel, launches, estimated_ns })
            .collect();
        missing_kernels.sort_by(|a, b| b.launches.cmp(&a.launches).then_with(|| a.kernel.cmp(&b.kernel)));
        CalibrationCoverage {
            kernel_launches: self.launches,
            kernel_ns: self.ns,
            missing_launches: missing_kernels.iter().map(|k| k.launches).sum(),
            missing_ns: missing_kernels.iter().map(|k| k.estimated_ns).sum(),
            fallback_ns: self.fallback_ns,
            missing_kernels,
            library_launches: self.library.0,
            library_ns: self.library.1,
            library: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::parse_str;
    use crate::analysis::timeline::{self, tests::launch, tests::sync};

    #[test]
    fn kernels_missing_from_the_calibration_are_counted_and_timed_with_the_median() {
        // kA x3 (calibrated: 10 µs), kB x1 (not in the file); the file also has
        // kC 40 µs and kD 20 µs, so the median of its kernels is 20 µs
        let l = [
            launch(0, 1.0, "kA", "0x0"),
            launch(100_000, 1.0, "kB", "0x0"),
            launch(200_000, 1.0, "kA", "0x0"),
            launch(300_000, 1.0, "kA", "0x0"),
            sync(301_000, 100.0, "0x0"),
        ];
        let t = parse_str("c", &l.join("\n")).unwrap();
        let d = timeline::tests::durs(&[("kA", 10_000), ("kC", 40_000), ("kD", 20_000)]);
        let tl = timeline::inferred(&t, &d);
        // each starts at its launch's return: kA [1, 11], kB [101, 121], kA [201, 211], kA [301, 311] µs
        let iv: Vec<(u64, u64)> = tl.streams[0].intervals.iter().map(|i| (i.start, i.end)).collect();
        assert_eq!(iv, [(1_000, 11_000), (101_000, 121_000), (201_000, 211_000), (301_000, 311_000)]);
        let c = tl.diag.coverage.clone().unwrap();
        assert_eq!(
            c,
            CalibrationCoverage {
                kernel_launches: 4,
                kernel_ns: 50_000,
                missing_launches: 1,
                missing_ns: 20_000,
                fallback_ns: 20_000,
                missing_kernels: vec![MissingKernel { kernel: "kB".into(), launches: 1, estimated_ns: 20_000 }],
                ..Default::default()
            }
        );
        assert_eq!((c.missing_launch_share(), c.missing_time_share()), (0.25, 0.4));
        assert_eq!(tl.diag.unknown_kernels, 1);
        assert_eq!(
            c.sentence(),
            "calibration coverage: 1 of 4 kernel launches (25.0%) of 1 kernel(s) missing from the calibration, timed \
             at 20.0 µs each (the median of the calibrated kernels): 20.0 µs of 50.0 µs estimated kernel time \
             (40.0%); most launched: kB ×1"
        );
        // the report and the gaps say it
        let ph = crate::analysis::phases::phases(&t);
        let r = crate::analysis::report::build(&t, &ph, &tl);
        assert_eq!(r.calibration_coverage.as_ref(), Some(&c));
        assert!(r.notes.contains(&c.sentence()), "{:?}", r.notes);
        let g = crate::analysis::gaps::analyze(&t, &tl, &ph, &Default::default());
        assert!(crate::analysis::gaps::render(&g).contains(&format!("\n{}\n", c.sentence())));
        // a calibration that knows every kernel
        let full = timeline::inferred(&t, &timeline::tests::durs(&[("kA", 10_000), ("kB", 5_000)]));
        let c = full.diag.coverage.unwrap();
        assert_eq!((c.kernel_launches, c.kernel_ns, c.missing_launches, c.missing_ns), (4, 35_000, 0, 0));
        assert_eq!(c.sentence(), "calibration coverage: all 4 kernel launches have a calibrated duration");
        // no durations at all: no coverage to report
        assert_eq!(timeline::bound(&t).diag.coverage, None);
    }
}
