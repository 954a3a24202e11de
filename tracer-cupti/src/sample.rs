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

/// How the records are switched: a fixed duty cycle (`--gpu-sample`), or
/// adaptive windows with CUPTI detached in between (the default recording).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    Duty(Spec),
    Adaptive(Adaptive),
}

impl Plan {
    /// `Spec::parse`'s form, or `adaptive:WINDOW/MAX_WINDOW/MAX_GAP`.
    pub fn parse(s: &str) -> Result<Plan, String> {
        match s.trim().strip_prefix("adaptive:") {
            Some(a) => Adaptive::parse(a).map(Plan::Adaptive),
            None => Spec::parse(s).map(Plan::Duty),
        }
    }

    /// The form [`Plan::parse`] reads.
    pub fn env_value(&self) -> String {
        match self {
            Plan::Duty(s) => s.env_value(),
            Plan::Adaptive(a) => a.env_value(),
        }
    }
}

/// Adaptive windows (the default recording, docs/gpu-timestamps.md): CUPTI is
/// attached for a window of `window_ms` from cuInit on; a window that keeps
/// meeting kernels (or copy sizes) neither this process nor the durations
/// library knew is extended by `window_ms` up to `max_window_ms`; then CUPTI
/// is detached altogether (`cuptiFinalize`, so nothing of it stays on the
/// launch path) and attached again after a gap ([`Adaptive::next_gap`]): one
/// window long while there is still something new, doubling while nothing
/// is, up to `max_gap_ms` (up to [`IDLE_GAP_MS`] after a window that saw no
/// GPU work at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Adaptive {
    pub window_ms: u64,
    pub max_window_ms: u64,
    pub max_gap_ms: u64,
}

/// The longest gap after a window that saw no GPU work (the program had not
/// started its GPU work yet, or paused it): work that starts after a pause
/// is met within about this long.
pub const IDLE_GAP_MS: u64 = 1_000;

/// The default recording's windows.
pub const DEFAULT_ADAPTIVE: Adaptive = Adaptive { window_ms: 100, max_window_ms: 2_000, max_gap_ms: 20_000 };

impl Adaptive {
    /// "WINDOW_MS/MAX_WINDOW_MS/MAX_GAP_MS", 0 < WINDOW ≤ MAX_WINDOW ≤ 1 hour, WINDOW ≤ MAX_GAP ≤ 1 hour.
    pub fn parse(s: &str) -> Result<Adaptive, String> {
        let bad = || {
            format!(
                "`adaptive:{s}`: expected adaptive:WINDOW_MS/MAX_WINDOW_MS/MAX_GAP_MS with 0 < WINDOW_MS ≤ \
                 MAX_WINDOW_MS ≤ 3600000 and WINDOW_MS ≤ MAX_GAP_MS ≤ 3600000, e.g. adaptive:100/2000/20000"
            )
        };
        let v: Vec<&str> = s.trim().split('/').collect();
        if v.len() != 3 {
            return Err(bad());
        }
        let n = |x: &str| x.trim().parse::<u64>().map_err(|_| bad());
        let a = Adaptive { window_ms: n(v[0])?, max_window_ms: n(v[1])?, max_gap_ms: n(v[2])? };
        if a.window_ms == 0
            || a.window_ms > a.max_window_ms
            || a.max_window_ms > 3_600_000
            || a.window_ms > a.max_gap_ms
            || a.max_gap_ms > 3_600_000
        {
            return Err(bad());
        }
        Ok(a)
    }

    pub fn env_value(&self) -> String {
        format!("adaptive:{}/{}/{}", self.window_ms, self.max_window_ms, self.max_gap_ms)
    }

    /// Whether a window open for `open_ms` goes on for another `window_ms`:
    /// it met something new in its last `window_ms` and may still grow.
    pub fn extend(&self, open_ms: u64, new_in_last: u64) -> bool {
        new_in_last > 0 && open_ms + self.window_ms <= self.max_window_ms
    }

    /// The gap (ms) before the next window, after one that held `records`
    /// records of which `new_in_last` were new in its last `window_ms`, the
    /// gap before it having been `prev_gap_ms` (0 before the first).
    pub fn next_gap(&self, prev_gap_ms: u64, records: u64, new_in_last: u64) -> u64 {
        let w = self.window_ms;
        if new_in_last > 0 {
            w // still learning (the window reached its longest): back soon
        } else if records == 0 {
            (prev_gap_ms * 2).clamp(w, IDLE_GAP_MS.max(w)).max(prev_gap_ms.min(self.max_gap_ms))
        } else {
            (prev_gap_ms * 2).clamp(2 * w, self.max_gap_ms.max(w))
        }
    }
}

/// What a record is known by for "new" in adaptive windows: a kernel by its
/// name and launch geometry (the durations library's key), a copy or set by
/// its direction and size within a factor of 16. FNV-1a, 64 bits.
pub fn kernel_key(name: &[u8], grid: [u32; 3], block: [u32; 3], shared_mem: u32) -> u64 {
    let mut h = Fnv::new();
    h.bytes(b"k");
    h.bytes(name);
    for v in grid.iter().chain(&block).chain(std::iter::once(&shared_mem)) {
        h.bytes(&v.to_le_bytes());
    }
    h.0
}

/// [`kernel_key`]'s counterpart for a copy (`dir`: h2d, d2h, d2d, …) or a set (`memset`) of `bytes`.
pub fn copy_key(dir: &str, bytes: u64) -> u64 {
    let mut h = Fnv::new();
    h.bytes(b"c");
    h.bytes(dir.as_bytes());
    h.bytes(&[size_class(bytes)]);
    h.0
}

/// Size classes of copies, a factor of 16 apart (0: under 8 bytes, 1: 8-127, …).
pub fn size_class(bytes: u64) -> u8 {
    ((64 - bytes.leading_zeros()) / 4) as u8
}

/// Every size class [`size_class`] can give.
pub const SIZE_CLASSES: std::ops::RangeInclusive<u8> = 0..=16;

/// The variable naming the file of keys already known (one hex key per line).
pub const KNOWN_ENV: &str = "TRACER_CUPTI_KNOWN";

/// The variable naming the demand file: one u64 (little-endian) that the
/// tracer increments when the program launched a kernel nobody knew; a
/// change ends the gap between adaptive windows at once.
pub const DEMAND_ENV: &str = "TRACER_CUPTI_DEMAND";

/// How often the gap between windows looks at the demand file (ms).
pub const DEMAND_POLL_MS: u64 = 10;

/// Keys of a known-keys file's text (bad lines are skipped).
pub fn parse_known(text: &str) -> std::collections::HashSet<u64> {
    text.lines().filter_map(|l| u64::from_str_radix(l.trim(), 16).ok()).collect()
}

struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 = (self.0 ^ x as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

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
        assert_eq!(Plan::parse("20/200"), Ok(Plan::Duty(Spec::parse("20/200").unwrap())));
        let a = Plan::parse("adaptive:100/2000/20000").unwrap();
        assert_eq!(a, Plan::Adaptive(DEFAULT_ADAPTIVE));
        assert_eq!(Plan::parse(&a.env_value()), Ok(a));
        for bad in ["adaptive:", "adaptive:0/1/1", "adaptive:200/100/1000", "adaptive:100/200/50", "adaptive:1/2"] {
            assert!(Plan::parse(bad).unwrap_err().contains("expected adaptive:WINDOW_MS"), "{bad}");
        }
        for bad in ["", "20", "0/100", "200/20", "a/b", "1/3600001", "-1/5", "20/200/x", "20/200/3600001", "1/2/3/4"] {
            let e = Spec::parse(bad).unwrap_err();
            assert!(e.contains("expected WINDOW_MS/PERIOD_MS[/LEAD_MS]"), "{bad}: {e}");
        }
    }

    #[test]
    fn adaptive_windows_grow_while_new_and_back_off_while_not() {
        let a = DEFAULT_ADAPTIVE;
        // a window that met new work goes on, up to 2 s
        assert!(a.extend(100, 3));
        assert!(a.extend(1_900, 1));
        assert!(!a.extend(2_000, 1));
        assert!(!a.extend(100, 0));
        // gaps: one window while learning, doubling from 200 ms up to 20 s otherwise
        assert_eq!(a.next_gap(0, 50, 4), 100);
        assert_eq!(a.next_gap(0, 50, 0), 200);
        assert_eq!(a.next_gap(200, 50, 0), 400);
        assert_eq!(a.next_gap(12_800, 50, 0), 20_000);
        assert_eq!(a.next_gap(20_000, 50, 0), 20_000);
        // no GPU work in the window: doubling up to 1 s, never shorter than the gap before
        assert_eq!(a.next_gap(0, 0, 0), 100);
        assert_eq!(a.next_gap(400, 0, 0), 800);
        assert_eq!(a.next_gap(800, 0, 0), 1_000);
        assert_eq!(a.next_gap(20_000, 0, 0), 20_000);
    }

    #[test]
    fn keys() {
        let k = kernel_key(b"_Z3addPf", [1, 1, 1], [32, 1, 1], 0);
        assert_eq!(k, kernel_key(b"_Z3addPf", [1, 1, 1], [32, 1, 1], 0));
        assert_ne!(k, kernel_key(b"_Z3addPf", [2, 1, 1], [32, 1, 1], 0));
        assert_ne!(k, kernel_key(b"_Z3addPf", [1, 1, 1], [32, 1, 1], 16));
        assert_eq!((size_class(0), size_class(7), size_class(8), size_class(127), size_class(128)), (0, 0, 1, 1, 2));
        assert_eq!(size_class(1 << 20), 5);
        assert_eq!(size_class(u64::MAX), 16);
        assert_eq!(copy_key("h2d", 4096), copy_key("h2d", 8000));
        assert_ne!(copy_key("h2d", 4096), copy_key("d2h", 4096));
        assert_ne!(copy_key("h2d", 4096), copy_key("h2d", 1 << 20));
        let text = format!("{k:x}\nnot hex\n\n {:x} \n", copy_key("memset", 8));
        assert_eq!(parse_known(&text), [k, copy_key("memset", 8)].into_iter().collect());
    }
}
