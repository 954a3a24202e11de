//! Sampled measurement (`tracer --gpu-timestamps --gpu-sample WINDOW/PERIOD`):
//! CUPTI's kernel, copy and set records are on for WINDOW ms at the start of
//! every PERIOD ms (the first window opens when the process initialises
//! CUDA) and off in between, so CUPTI's per-launch cost is paid only inside
//! the windows. The library reports each window ([`crate::wire::Msg::Window`],
//! trace line `gpu_window`): its start is stamped after the records were
//! enabled and its end before they were disabled, so every launch whose
//! entry lies inside a window has its record. The analysis calibrates the
//! rest of the run from them (tracer's `analysis/sampled.rs`).

/// The variable that carries the spec to the injection library.
pub const ENV: &str = "TRACER_CUPTI_SAMPLE";

/// A sampling duty cycle in ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    pub window_ms: u64,
    pub period_ms: u64,
}

impl Spec {
    /// "WINDOW_MS/PERIOD_MS", e.g. "20/200": 0 < WINDOW ≤ PERIOD ≤ 1 hour.
    pub fn parse(s: &str) -> Result<Spec, String> {
        let bad =
            || format!("`{s}`: expected WINDOW_MS/PERIOD_MS with 0 < WINDOW_MS ≤ PERIOD_MS ≤ 3600000, e.g. 20/200");
        let (w, p) = s.trim().split_once('/').ok_or_else(bad)?;
        let (w, p): (u64, u64) = (w.trim().parse().map_err(|_| bad())?, p.trim().parse().map_err(|_| bad())?);
        if w == 0 || w > p || p > 3_600_000 {
            return Err(bad());
        }
        Ok(Spec { window_ms: w, period_ms: p })
    }

    /// The form [`Spec::parse`] reads.
    pub fn env_value(&self) -> String {
        format!("{}/{}", self.window_ms, self.period_ms)
    }

    /// Whether records stay on all the time (window = period).
    pub fn always_on(&self) -> bool {
        self.window_ms == self.period_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        assert_eq!(Spec::parse("20/200"), Ok(Spec { window_ms: 20, period_ms: 200 }));
        assert_eq!(Spec::parse(" 5 / 5 ").map(|s| s.always_on()), Ok(true));
        assert_eq!(Spec::parse("20/200").unwrap().env_value(), "20/200");
        for bad in ["", "20", "0/100", "200/20", "a/b", "1/3600001", "-1/5"] {
            let e = Spec::parse(bad).unwrap_err();
            assert!(e.contains("expected WINDOW_MS/PERIOD_MS"), "{bad}: {e}");
        }
    }
}
