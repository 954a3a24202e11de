//! What the busy and idle figures of a GPU timeline rest on, and how every
//! command says it (docs/gaps.md#1-which-gpu-timeline):
//!
//! - `measured`: CUPTI activity records (`gpu` lines): busy and idle time
//!   are known;
//! - `calibrated`: a simulation with kernel durations from a calibration
//!   (`--durations FILE`, `tracer calibrate` or replay's isolated mode, the
//!   durations library line of the trace: docs/durations-library.md): busy
//!   and idle time are inferred, labelled "inferred (calibrated from FILE)";
//! - `lower_bound`: neither. Only certain idle time is known (after a
//!   synchronization returned, before the next submission); the busy time
//!   and the busy/idle share are unknown and never printed as figures, the
//!   idle time only as "idle ≥ X (lower bound)".
use serde::Serialize;

use super::timeline::{Source, Timeline};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleBasis {
    Measured,
    Calibrated,
    LowerBound,
}

impl IdleBasis {
    pub fn of(tl: &Timeline) -> Self {
        match tl.source {
            Source::Measured => IdleBasis::Measured,
            // measured inside the windows, calibrated from them elsewhere
            Source::Inferred | Source::Sampled => IdleBasis::Calibrated,
            Source::Bound => IdleBasis::LowerBound,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            IdleBasis::Measured => "measured",
            IdleBasis::Calibrated => "calibrated",
            IdleBasis::LowerBound => "lower_bound",
        }
    }

    /// Whether busy time and the busy/idle share are known (measured or inferred).
    pub fn share_known(self) -> bool {
        self != IdleBasis::LowerBound
    }
}

pub use super::durations::UNNAMED_CALIBRATION;

/// The label of a timeline's busy/idle figures: "measured", "inferred
/// (calibrated from FILE)", or "unknown (lower bound only)".
pub fn label(tl: &Timeline) -> String {
    match IdleBasis::of(tl) {
        IdleBasis::Measured => "measured".into(),
        IdleBasis::Calibrated => {
            format!("inferred (calibrated from {})", tl.calibrated_from.as_deref().unwrap_or(UNNAMED_CALIBRATION))
        }
        IdleBasis::LowerBound => "unknown (lower bound only)".into(),
    }
}

/// "; expected error of the busy time about X % (…)" for a calibrated
/// timeline whose windows measured some of the launches it times (the
/// diagnostics' `expected_busy_error_pct`), else "".
pub fn expected_error(pct: Option<f64>) -> String {
    match pct {
        Some(p) => format!(
            "; expected error of the busy time about {p:.1} % (this run's measured kernels against the durations the \
             rest was timed with)"
        ),
        None => String::new(),
    }
}

/// One sentence for a report's header: what the busy/idle figures below are.
pub fn sentence(tl: &Timeline) -> String {
    match IdleBasis::of(tl) {
        IdleBasis::Measured => "GPU busy/idle: measured (CUPTI activity records)".into(),
        IdleBasis::Calibrated => {
            format!(
                "GPU busy/idle: {}{}{}",
                label(tl),
                expected_error(tl.diag.expected_busy_error_pct),
                super::window_check::phrase(tl.diag.window_check.as_ref())
            )
        }
        IdleBasis::LowerBound => "GPU busy/idle share: unknown (no measured or calibrated kernel durations: record \
                                  with --gpu-timestamps, or pass --durations FILE); idle ≥ X is certain idle time, a \
                                  lower bound"
            .into(),
    }
}
