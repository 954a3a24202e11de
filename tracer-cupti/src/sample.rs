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
///
/// The windows' cost is held to `budget_bp` basis points of the process's
/// time since cuInit ([`Adaptive::budget_wait_ns`]): a gap also lasts until
/// the cost so far (attach and detach times as measured, plus
/// [`RECORD_COST_NS`] per record) is within that share, so that a program
/// whose work is all known is measured again only rarely. Learning goes
/// first: after a window that met new work, while no window has seen GPU
/// work yet (a slow attach before the program's first kernel must not use
/// up the run's budget), and for a window the tracer
/// demands for a kernel nobody knew ([`DEMAND_ENV`]), the share is
/// [`LEARNING_SHARE`] times larger; a demanded window also stays open while
/// it has no records yet (the kernel may be named in a graph or module
/// before it runs), up to `max_window_ms`. 0 basis points: no budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Adaptive {
    pub window_ms: u64,
    pub max_window_ms: u64,
    pub max_gap_ms: u64,
    pub budget_bp: u32,
    /// 0: the budget holds over the time since cuInit. Otherwise the windows' cost within
    /// any stretch of this many ms is held to the share of it ([`Adaptive::budget_wait`]):
    /// time without windows (a program's set-up) cannot be saved up and spent in one
    /// short phase.
    pub horizon_ms: u64,
}

/// The longest gap after a window that saw no GPU work (the program had not
/// started its GPU work yet, or paused it): work that starts after a pause
/// is met within about this long.
pub const IDLE_GAP_MS: u64 = 1_000;

/// How many times the budget's share the windows may use while they still
/// meet new work (after a window that held new keys, and for a demanded one).
pub const LEARNING_SHARE: u32 = 5;

/// What one activity record is taken to cost the program while CUPTI is
/// attached, for the budget: CUPTI's work per launch (its activity record,
/// correlation and driver callbacks), an estimate on the high side so that
/// the budget errs towards measuring less (docs/gpu-timestamps.md has the
/// measured figure).
pub const RECORD_COST_NS: u64 = 5_000;

/// How many launches fill an adaptive window: it ends once the program's launches in it
/// ([`launch_weight`], counted at their returns) reach this many, however long it was to
/// last. A window's records are handed over on the injection's threads at some µs each, and
/// CUPTI keeps every one while the program goes on at full speed: a graph of 20 empty
/// kernels made 0.9 million records a second on the H200, the hand-over fell behind, and
/// the window stayed open to the program's end (docs/gpu-timestamps/window_cost_2026-12-03_H200/).
/// 4,096 launches (64 graph launches) hold every configuration that makes up ≥ 1 % of
/// them some 40 times. [`WINDOW_LAUNCHES_ENV`] sets another cap (0: none).
pub const WINDOW_LAUNCHES: u64 = 4_096;

/// The variable that sets [`WINDOW_LAUNCHES`] (a number; 0: windows are not cut by launches).
pub const WINDOW_LAUNCHES_ENV: &str = "TRACER_CUPTI_WINDOW_LAUNCHES";

/// What a graph launch counts for [`WINDOW_LAUNCHES`]: a graph runs all its kernels, so 64
/// graph launches fill a window (each of its kernel nodes measured 64 times).
pub const GRAPH_LAUNCH_WEIGHT: u64 = 64;

/// What the return of the driver function `function` counts towards a window's
/// [`WINDOW_LAUNCHES`]: 1 for a kernel launch (`cuLaunchKernel`, `cuLaunchKernelEx`,
/// `cuLaunchCooperativeKernel`, and their `_ptsz`, `_ptds` forms), [`GRAPH_LAUNCH_WEIGHT`]
/// for a graph launch, 0 for anything else (`cuLaunchHostFunc` runs no kernel).
pub fn launch_weight(function: &[u8]) -> u64 {
    if function.starts_with(b"cuGraphLaunch") {
        GRAPH_LAUNCH_WEIGHT
    } else if function.starts_with(b"cuLaunch") && !function.starts_with(b"cuLaunchHostFunc") {
        1
    } else {
        0
    }
}

/// The cap of a window's launches from [`WINDOW_LAUNCHES_ENV`]'s value (unset or unreadable:
/// [`WINDOW_LAUNCHES`]; 0: none).
pub fn window_launches(v: Option<&str>) -> u64 {
    v.and_then(|s| s.trim().parse().ok()).unwrap_or(WINDOW_LAUNCHES)
}

/// The default recording's windows: 2 % of the run's time at most.
pub const DEFAULT_ADAPTIVE: Adaptive =
    Adaptive { window_ms: 100, max_window_ms: 2_000, max_gap_ms: 20_000, budget_bp: 200, horizon_ms: 0 };

impl Adaptive {
    /// "WINDOW_MS/MAX_WINDOW_MS/MAX_GAP_MS[/BUDGET_PCT[/HORIZON_MS]]", 0 < WINDOW ≤ MAX_WINDOW ≤
    /// 1 hour, WINDOW ≤ MAX_GAP ≤ 1 hour, 0 ≤ BUDGET_PCT ≤ 100 with at most two decimals
    /// (default 2; 0: no budget), HORIZON_MS 0 (the default: since cuInit) or WINDOW ≤
    /// HORIZON_MS ≤ 1 hour.
    pub fn parse(s: &str) -> Result<Adaptive, String> {
        let bad = || {
            format!(
                "`adaptive:{s}`: expected adaptive:WINDOW_MS/MAX_WINDOW_MS/MAX_GAP_MS[/BUDGET_PCT[/HORIZON_MS]] \
                 with 0 < WINDOW_MS ≤ MAX_WINDOW_MS ≤ 3600000, WINDOW_MS ≤ MAX_GAP_MS ≤ 3600000, 0 ≤ BUDGET_PCT ≤ 100 \
                 (two decimals at most) and HORIZON_MS 0 or WINDOW_MS ≤ HORIZON_MS ≤ 3600000, e.g. \
                 adaptive:100/2000/20000/2"
            )
        };
        let v: Vec<&str> = s.trim().split('/').collect();
        if !(3..=5).contains(&v.len()) {
            return Err(bad());
        }
        let n = |x: &str| x.trim().parse::<u64>().map_err(|_| bad());
        let budget_bp = match v.get(3) {
            Some(b) => percent_bp(b).ok_or_else(bad)?,
            None => DEFAULT_ADAPTIVE.budget_bp,
        };
        let horizon_ms = match v.get(4) {
            Some(h) => n(h)?,
            None => 0,
        };
        let a = Adaptive { window_ms: n(v[0])?, max_window_ms: n(v[1])?, max_gap_ms: n(v[2])?, budget_bp, horizon_ms };
        if a.window_ms == 0
            || a.window_ms > a.max_window_ms
            || a.max_window_ms > 3_600_000
            || a.window_ms > a.max_gap_ms
            || a.max_gap_ms > 3_600_000
            || (a.horizon_ms != 0 && (a.horizon_ms < a.window_ms || a.horizon_ms > 3_600_000))
        {
            return Err(bad());
        }
        Ok(a)
    }

    pub fn env_value(&self) -> String {
        let b = self.budget_bp;
        let pct = if b.is_multiple_of(100) { format!("{}", b / 100) } else { format!("{}.{:02}", b / 100, b % 100) };
        let horizon = if self.horizon_ms == 0 { String::new() } else { format!("/{}", self.horizon_ms) };
        format!("adaptive:{}/{}/{}/{pct}{horizon}", self.window_ms, self.max_window_ms, self.max_gap_ms)
    }

    /// Whether a window open for `open_ms` goes on for another `window_ms`:
    /// it met something new in its last `window_ms` and may still grow.
    pub fn extend(&self, open_ms: u64, new_in_last: u64) -> bool {
        new_in_last > 0 && open_ms + self.window_ms <= self.max_window_ms
    }

    /// The gap (ms) before the next window, after one that held `records`
    /// records of which `new_in_last` were new in its last `window_ms`, the
    /// gap before it having been `prev_gap_ms` (0 before the first): one
    /// window while still learning; while nothing is new, 10 windows and
    /// then four times the gap before, up to `max_gap_ms` (only re-measuring
    /// known work, and a kernel name nobody knew is demanded at once), at
    /// least a quarter of `max_gap_ms` when every record was of work the
    /// durations library had (`confirmed`); after a window without GPU work,
    /// doubling up to [`IDLE_GAP_MS`].
    pub fn next_gap(&self, prev_gap_ms: u64, records: u64, new_in_last: u64, confirmed: bool) -> u64 {
        let w = self.window_ms;
        let max = self.max_gap_ms.max(w);
        if new_in_last > 0 {
            w // still learning (the window reached its longest): back soon
        } else if records == 0 {
            (prev_gap_ms * 2).clamp(w, IDLE_GAP_MS.max(w)).max(prev_gap_ms.min(self.max_gap_ms))
        } else {
            let least = (10 * w).min(max);
            let least = if confirmed { least.max(max / 4) } else { least };
            (prev_gap_ms.saturating_mul(4)).clamp(least, max)
        }
    }

    /// How long (ns) the next window must still wait for the budget, `spent_ns`
    /// of cost having been paid in the `elapsed_ns` since cuInit: until
    /// `spent_ns` is `share` times `budget_bp` of the time since cuInit (1
    /// normally, 2 for a demanded window, [`LEARNING_SHARE`] after new work).
    /// 0 without a budget.
    pub fn budget_wait_ns(&self, spent_ns: u64, elapsed_ns: u64, share: u32) -> u64 {
        if self.budget_bp == 0 {
            return 0;
        }
        let bp = self.budget_bp as u128 * share.max(1) as u128;
        let due = (spent_ns as u128 * 10_000).div_ceil(bp);
        (due.min(u64::MAX as u128) as u64).saturating_sub(elapsed_ns)
    }
}

/// The windows' cost so far, for the budget: in all, and per window (its end, its cost) for a
/// horizon ([`Adaptive::horizon_ms`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spent {
    pub total_ns: u64,
    windows: std::collections::VecDeque<(u64, u64)>,
}

impl Spent {
    /// A window that ended at `end_ns` (CLOCK_MONOTONIC) and cost `cost_ns`.
    pub fn add(&mut self, end_ns: u64, cost_ns: u64) {
        self.total_ns = self.total_ns.saturating_add(cost_ns);
        self.windows.push_back((end_ns, cost_ns));
    }

    /// Forgets the windows that ended before `before_ns`: no later stretch of the horizon holds them.
    pub fn forget_before(&mut self, before_ns: u64) {
        while self.windows.front().is_some_and(|&(end, _)| end < before_ns) {
            self.windows.pop_front();
        }
    }
}

impl Adaptive {
    /// How long (ns) from `now_ns` the next window must still wait for the budget, the first
    /// window having opened at `since_ns` (cuInit), at `share` times `budget_bp`
    /// ([`Adaptive::budget_wait_ns`]'s shares). Without a horizon, the cost so far against the
    /// time since cuInit. With one (H), the earliest time t from now at which the windows that
    /// ended within [t − H, t] cost at most the share of min(t − since, H): a window that cost
    /// more than the share of H waits until it is H old.
    pub fn budget_wait(&self, spent: &Spent, since_ns: u64, now_ns: u64, share: u32) -> u64 {
        if self.budget_bp == 0 {
            return 0;
        }
        let now = now_ns.max(since_ns);
        if self.horizon_ms == 0 {
            return self.budget_wait_ns(spent.total_ns, now - since_ns, share);
        }
        let h = self.horizon_ms.saturating_mul(1_000_000);
        let bp = self.budget_bp as u128 * share.max(1) as u128;
        let w = &spent.windows;
        let mut i = 0;
        let mut t = now;
        loop {
            while i < w.len() && w[i].0.saturating_add(h) < t {
                i += 1;
            }
            let sum: u128 = w.iter().skip(i).map(|&(_, c)| c as u128).sum();
            // the time since cuInit the sum needs (at most H of it counts)
            let need = (sum * 10_000).div_ceil(bp);
            // the next window to drop out of the horizon, and when
            let drop = w.get(i).map(|&(end, _)| end.saturating_add(h).saturating_add(1));
            if need <= h as u128 {
                let at = t.max(since_ns.saturating_add(need as u64));
                if drop.is_none_or(|d| at <= d) {
                    return at - now;
                }
            }
            match drop {
                Some(d) => t = d.max(t),
                None => return u64::MAX,
            }
        }
    }
}

/// A window's cost for the budget: its attach and detach times and [`RECORD_COST_NS`] per record.
pub fn window_cost_ns(attach_ns: u64, detach_ns: u64, records: u64) -> u64 {
    attach_ns.saturating_add(detach_ns).saturating_add(records.saturating_mul(RECORD_COST_NS))
}

/// "2" → 200, "0.5" → 50, "12.25" → 1225 (basis points); None past 100 % or more than two decimals.
fn percent_bp(s: &str) -> Option<u32> {
    let s = s.trim();
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if whole.is_empty() || frac.len() > 2 || !whole.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let w: u32 = whole.parse().ok()?;
    let f: u32 = if frac.is_empty() { 0 } else { format!("{frac:0<2}").parse().ok()? };
    let bp = w.checked_mul(100)?.checked_add(f)?;
    (bp <= 10_000).then_some(bp)
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

/// How often the gap between windows looks at the demand file where inotify is refused (ms;
/// otherwise it sleeps until the file is written, crate::demand).
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
        assert_eq!(a.env_value(), "adaptive:100/2000/20000/2");
        for (spec, bp, back) in [("0", 0, "0"), ("0.5", 50, "0.50"), ("12.25", 1225, "12.25"), ("100", 10_000, "100")] {
            let p = Adaptive::parse(&format!("10/20/30/{spec}")).unwrap();
            assert_eq!((p.budget_bp, p.env_value()), (bp, format!("adaptive:10/20/30/{back}")), "{spec}");
            assert_eq!(Plan::parse(&p.env_value()), Ok(Plan::Adaptive(p)));
        }
        // a horizon: kept through the environment; 0 is since cuInit, the default
        let p = Adaptive::parse("10/20/30/2/1000").unwrap();
        assert_eq!((p.horizon_ms, p.env_value()), (1000, "adaptive:10/20/30/2/1000".to_string()));
        assert_eq!(Plan::parse(&p.env_value()), Ok(Plan::Adaptive(p)));
        assert_eq!(Adaptive::parse("10/20/30/2/0").map(|p| p.env_value()), Ok("adaptive:10/20/30/2".into()));
        assert_eq!(Adaptive::parse("10/20/30/2/10").map(|p| p.horizon_ms), Ok(10));
        for bad in [
            "adaptive:",
            "adaptive:0/1/1",
            "adaptive:200/100/1000",
            "adaptive:100/200/50",
            "adaptive:1/2",
            "adaptive:1/2/3/100.01",
            "adaptive:1/2/3/0.125",
            "adaptive:1/2/3/-1",
            "adaptive:1/2/3/.5",
            "adaptive:1/2/3/4/5/6",
            "adaptive:10/20/30/2/5",
            "adaptive:10/20/30/2/3600001",
            "adaptive:10/20/30/2/x",
        ] {
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
        // gaps: one window while learning; otherwise 1 s, then four times longer up to 20 s
        assert_eq!(a.next_gap(0, 50, 4, false), 100);
        assert_eq!(a.next_gap(0, 50, 0, false), 1_000);
        assert_eq!(a.next_gap(100, 50, 0, false), 1_000);
        assert_eq!(a.next_gap(1_000, 50, 0, false), 4_000);
        assert_eq!(a.next_gap(4_000, 50, 0, false), 16_000);
        assert_eq!(a.next_gap(16_000, 50, 0, false), 20_000);
        assert_eq!(a.next_gap(20_000, 50, 0, false), 20_000);
        // every record of work the library had: a quarter of the longest gap at once
        assert_eq!(a.next_gap(0, 50, 0, true), 5_000);
        assert_eq!(a.next_gap(5_000, 50, 0, true), 20_000);
        assert_eq!(a.next_gap(0, 0, 0, true), 100);
        assert_eq!(a.next_gap(0, 50, 3, true), 100);
        let small = Adaptive::parse("20/100/150").unwrap(); // 10 windows past the longest gap
        assert_eq!((small.next_gap(0, 5, 0, false), small.next_gap(150, 5, 0, false)), (150, 150));
        // no GPU work in the window: doubling up to 1 s, never shorter than the gap before
        assert_eq!(a.next_gap(0, 0, 0, false), 100);
        assert_eq!(a.next_gap(400, 0, 0, false), 800);
        assert_eq!(a.next_gap(800, 0, 0, false), 1_000);
        assert_eq!(a.next_gap(20_000, 0, 0, false), 20_000);
    }

    #[test]
    fn launches_fill_a_window_graph_launches_by_their_weight() {
        for f in [
            "cuLaunchKernel",
            "cuLaunchKernel_ptsz",
            "cuLaunchKernelEx",
            "cuLaunchKernelEx_ptsz",
            "cuLaunchCooperativeKernel",
        ] {
            assert_eq!(launch_weight(f.as_bytes()), 1, "{f}");
        }
        for f in ["cuGraphLaunch", "cuGraphLaunch_ptsz"] {
            assert_eq!(launch_weight(f.as_bytes()), GRAPH_LAUNCH_WEIGHT, "{f}");
        }
        for f in [
            "cuStreamSynchronize",
            "cuMemcpyHtoDAsync_v2",
            "cuGraphInstantiateWithFlags",
            "cuLibraryLoadData",
            "cuLaunchHostFunc",
            "cuLaunchHostFunc_ptsz",
            "",
        ] {
            assert_eq!(launch_weight(f.as_bytes()), 0, "{f}");
        }
        // 64 graph launches fill a window, as 4,096 kernel launches do
        assert_eq!(WINDOW_LAUNCHES / GRAPH_LAUNCH_WEIGHT, 64);
        assert_eq!(window_launches(None), 4_096);
        assert_eq!(window_launches(Some(" 20 ")), 20);
        assert_eq!(window_launches(Some("0")), 0);
        assert_eq!(window_launches(Some("many")), 4_096);
    }

    #[test]
    fn the_budget_holds_the_windows_cost_to_its_share_of_the_run() {
        let a = DEFAULT_ADAPTIVE; // 2 %
        // 40 ms of cost after 1 s: the next window waits until 2 s have passed (1 s more)
        assert_eq!(a.budget_wait_ns(40_000_000, 1_000_000_000, 1), 1_000_000_000);
        // demanded: twice the share, due at 1 s; learning: five times, due at 0.4 s
        assert_eq!(a.budget_wait_ns(40_000_000, 1_000_000_000, 2), 0);
        assert_eq!(a.budget_wait_ns(40_000_000, 100_000_000, LEARNING_SHARE), 300_000_000);
        assert_eq!(a.budget_wait_ns(40_000_000, 3_000_000_000, 1), 0);
        assert_eq!(Adaptive { budget_bp: 0, ..a }.budget_wait_ns(u64::MAX, 0, 1), 0);
        // a window of 20 ms attach, 5 ms detach and 3000 records costs 40 ms
        assert_eq!(window_cost_ns(20_000_000, 5_000_000, 3_000), 40_000_000);
        assert_eq!(window_cost_ns(u64::MAX, 1, u64::MAX), u64::MAX);
        assert_eq!(Adaptive { budget_bp: 1, ..a }.budget_wait_ns(u64::MAX, 0, 1), u64::MAX);
    }

    #[test]
    fn a_horizon_keeps_the_budget_from_being_saved_up() {
        const MS: u64 = 1_000_000;
        let since = 1_000 * MS;
        let at = |ms: u64| since + ms * MS;
        let spent = |w: &[(u64, u64)]| {
            let mut s = Spent::default();
            for &(end, cost) in w {
                s.add(at(end), cost * MS);
            }
            s
        };
        let a = DEFAULT_ADAPTIVE; // 2 %, since cuInit
        let h = Adaptive { horizon_ms: 1_000, ..a }; // 2 % of any second: 20 ms
        // since cuInit, 30 ms after 10 s is well within the budget; within one second it is not:
        // the window waits until it is a second old
        let one = spent(&[(10_000, 30)]);
        assert_eq!(a.budget_wait(&one, since, at(10_000), 1), 0);
        assert_eq!(a.budget_wait(&one, since, at(10_000), 1), a.budget_wait_ns(30 * MS, 10_000 * MS, 1));
        assert_eq!(h.budget_wait(&one, since, at(10_000), 1), 1_000 * MS + 1);
        // learning (five times the share: 100 ms a second) may go on at once
        assert_eq!(h.budget_wait(&one, since, at(10_000), LEARNING_SHARE), 0);
        // 10 ms in the last second: within it
        assert_eq!(h.budget_wait(&spent(&[(10_000, 10)]), since, at(10_000), 1), 0);
        // two of 15 ms half a second apart: until the first is a second old, then 15 ms is within
        let two = spent(&[(9_500, 15), (10_000, 15)]);
        assert_eq!(h.budget_wait(&two, since, at(10_000), 1), 500 * MS + 1);
        // early in the run the share is of the time since cuInit, as without a horizon:
        // 10 ms after 200 ms waits until 500 ms have passed
        let early = spent(&[(200, 10)]);
        assert_eq!(h.budget_wait(&early, since, at(200), 1), 300 * MS);
        assert_eq!(a.budget_wait(&early, since, at(200), 1), 300 * MS);
        // no budget, no wait; nothing spent, no wait
        assert_eq!(Adaptive { budget_bp: 0, ..h }.budget_wait(&one, since, at(10_000), 1), 0);
        assert_eq!(h.budget_wait(&Spent::default(), since, at(5), 1), 0);
        // forgetting the windows older than the horizon changes nothing for later waits
        let mut f = two.clone();
        f.forget_before(at(10_000) - 1_000 * MS);
        assert_eq!(h.budget_wait(&f, since, at(10_000), 1), 500 * MS + 1);
        f.forget_before(at(9_600));
        assert_eq!((h.budget_wait(&f, since, at(10_000), 1), f.total_ns), (0, 30 * MS));
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
