//! Numbers as the figures and summaries print them: counts with
//! thousands separators, plurals, tallies and their differences in %.

/// 1234567 as "1,234,567".
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// "1 call", "2,000 calls".
pub fn plural(n: u64, what: &str) -> String {
    format!("{} {what}{}", thousands(n), if n == 1 { "" } else { "s" })
}

/// Count and summed duration (ns) of a set of intervals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub count: u64,
    pub ns: u64,
}

impl Tally {
    pub fn add(&mut self, ns: u64) {
        self.count += 1;
        self.ns = self.ns.saturating_add(ns);
    }
}

/// `other` relative to `base` in %: +10.0 when `other` is 10 % more; None
/// when `base` is 0 and `other` is not (0 vs 0 is 0 %).
pub fn diff_pct(base: u64, other: u64) -> Option<f64> {
    match (base, other) {
        (0, 0) => Some(0.0),
        (0, _) => None,
        _ => Some((other as f64 - base as f64) / base as f64 * 100.0),
    }
}

/// "+1.3 %", "n/a" for [`diff_pct`]'s None.
pub fn fmt_pct(p: Option<f64>) -> String {
    match p {
        Some(p) => format!("{p:+.1} %"),
        None => "n/a".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_differences() {
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(999), "999");
        assert_eq!(plural(1, "call"), "1 call");
        assert_eq!(plural(2000, "call"), "2,000 calls");
        assert_eq!((diff_pct(0, 0), diff_pct(0, 5), diff_pct(200, 250)), (Some(0.0), None, Some(25.0)));
        assert_eq!((fmt_pct(Some(1.25)), fmt_pct(None)), ("+1.2 %".to_owned(), "n/a".to_owned()));
    }
}
