//! Sampled measurement (`tracer --gpu-timestamps --gpu-sample WINDOW/PERIOD[/LEAD]`):
//! CUPTI's kernel, copy and set records are on for WINDOW ms at the start of
//! every PERIOD ms and off in between, so CUPTI's per-launch cost is paid
//! only inside the windows. The first window opens when the process
//! initialises CUDA and lasts at least LEAD ms (default [`DEFAULT_LEAD_MS`]):
//! a program's loading phase (its weights' host-to-device copies, unlike
//! anything later) is measured whole instead of being timed by the copy
//! model (GPT-2's busy time came out 35 % low when its copies fell between
//! 20/200 windows, docs/idle-accuracy.md). The library reports each window ([`crate::wire::Msg::Window`],
//! trace line `gpu_window`): its start is stamped after the records were
//! enabled and its end before they were disabled, so every launch whose
//! entry lies inside a window has its record. The analysis calibrates the
//! rest of the run from them (tracer's `analysis/sampled.rs`).

/// The variable that carries the spec to the injection library.
pub const ENV: &str = "TRACER_CUPTI_SAMPLE";

/// How long the first window lasts at least, unless the spec says otherwise.
pub const DEFAULT_LEAD_MS: u64 = 10_000;

/// A sampling duty cycle in ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    pub window_ms: u64,
    pub period_ms: u64,
    /// The first window lasts max(window, lead).
    pub lead_ms: u64,
}

impl Spec {
    /// "WINDOW_MS/PERIOD_MS[/LEAD_MS]", e.g. "20/200" (a 10 s lead-in) or
    /// "20/200/0" (none): 0 < WINDOW ≤ PERIOD ≤ 1 hour, LEAD ≤ 1 hour.
    pub fn parse(s: &str) -> Result<Spec, String> {
        let bad = || {
            format!(
                "`{s}`: expected WINDOW_MS/PERIOD_MS[/LEAD_MS] with 0 < WINDOW_MS ≤ PERIOD_MS ≤ 3600000 and \
                 LEAD_MS ≤ 3600000, e.g. 20/200"
            )
        };
        let v: Vec<&str> = s.trim().split('/').collect();
        if !(2..=3).contains(&v.len()) {
            return Err(bad());
        }
        let n = |x: &str| x.trim().parse::<u64>().map_err(|_| bad());
        let (w, p) = (n(v[0])?, n(v[1])?);
        let lead = v.get(2).map(|x| n(x)).transpose()?.unwrap_or(DEFAULT_LEAD_MS);
        if w == 0 || w > p || p > 3_600_000 || lead > 3_600_000 {
            return Err(bad());
        }
        Ok(Spec { window_ms: w, period_ms: p, lead_ms: lead })
    }

    /// The form [`Spec::parse`] reads.
    pub fn env_value(&self) -> String {
        format!("{}/{}/{}", self.window_ms, self.period_ms, self.lead_ms)
    }

    /// The first window's length (ms).
    pub fn first_window_ms(&self) -> u64 {
        self.window_ms.max(self.lead_ms)
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
        assert_eq!(Spec::parse("20/200"), Ok(Spec { window_ms: 20, period_ms: 200, lead_ms: 10_000 }));
        assert_eq!(Spec::parse("20/200/0"), Ok(Spec { window_ms: 20, period_ms: 200, lead_ms: 0 }));
        assert_eq!(Spec::parse(" 5 / 5 ").map(|s| s.always_on()), Ok(true));
        assert_eq!(Spec::parse("20/200").unwrap().env_value(), "20/200/10000");
        let s = Spec::parse("20/200/3000").unwrap();
        assert_eq!((Spec::parse(&s.env_value()), s.first_window_ms()), (Ok(s), 3000));
        assert_eq!(Spec::parse("20/200/5").unwrap().first_window_ms(), 20);
        for bad in ["", "20", "0/100", "200/20", "a/b", "1/3600001", "-1/5", "20/200/x", "20/200/3600001", "1/2/3/4"] {
            let e = Spec::parse(bad).unwrap_err();
            assert!(e.contains("expected WINDOW_MS/PERIOD_MS[/LEAD_MS]"), "{bad}: {e}");
        }
    }
}
