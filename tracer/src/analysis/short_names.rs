//! Short kernel names that never merge different kernels. The `short`
//! spelling (analysis/kernel_names.rs) elides template arguments, so the
//! instantiations of one template read alike: GPT-2's add, mul and tanh are
//! all `vectorized_elementwise_kernel<…>`. [`ShortNames`] is built over the
//! distinct kernels of one trace (one output) and resolves those collisions:
//!
//! - a kernel whose base name no other kernel shares keeps it;
//! - kernels that share one get the shortest part of their demangled
//!   template arguments and parameters that no other kernel of the group
//!   has, in this order of preference: a type or function name
//!   (`vectorized_elementwise_kernel<…CUDAFunctorOnSelf_add…>`), a template
//!   instance or lambda without namespaces, shortest first (lambdas with
//!   parameters before those without)
//!   (`…<…CUDAFunctor_add<Half>…>`, `…<…{lambda(bool)#1}…>`), a builtin type
//!   (`…<…float…>`), none over [`LABEL_MAX`] characters;
//! - when none is left (names `cpp_demangle` refuses, long names cut to the
//!   same `…`), a `#` and the first hex digits of a hash of the recorded
//!   name (FNV-1a, 6 digits, more until they differ, the recorded name
//!   itself should 16 not do).
//!
//! The result depends only on the set of names, never on their order, and
//! different recorded names never share a short name.
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::kernel_names::{self, NameStyle};
use super::model::Trace;

/// Short names of a set of kernels, pairwise distinct.
#[derive(Clone, Debug, Default)]
pub struct ShortNames {
    /// Recorded name -> short name.
    short: HashMap<String, String>,
}

impl ShortNames {
    /// The short names of the distinct names among `names` (recorded spelling).
    pub fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> ShortNames {
        let set: BTreeSet<&str> = names.into_iter().collect();
        let mut groups: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for &raw in &set {
            groups.entry(kernel_names::display(raw, NameStyle::Short).into_owned()).or_default().push(raw);
        }
        let mut short = HashMap::with_capacity(set.len());
        for (base, members) in &groups {
            if let [raw] = members[..] {
                short.insert(raw.to_string(), base.clone());
                continue;
            }
            let cands: Vec<Vec<String>> = members.iter().map(|r| candidates(r)).collect();
            // how many members have each label (each member lists a label once)
            let mut having: HashMap<&str, usize> = HashMap::new();
            for c in cands.iter().flatten() {
                *having.entry(c).or_default() += 1;
            }
            for (i, raw) in members.iter().enumerate() {
                let name = match cands[i].iter().find(|c| having[c.as_str()] == 1) {
                    Some(label) => with_label(base, label),
                    None => hashed(base, raw, 6),
                };
                short.insert(raw.to_string(), name);
            }
        }
        unique(&mut short);
        ShortNames { short }
    }

    /// The short names of a trace's strings (its kernels among them): one
    /// set for every output of the trace.
    pub fn of_trace(t: &Trace) -> ShortNames {
        ShortNames::of(t.strings.names().iter().map(|s| &**s))
    }

    /// `raw`'s short name; a name outside the set keeps its plain base name.
    pub fn short<'a>(&'a self, raw: &'a str) -> Cow<'a, str> {
        match self.short.get(raw) {
            Some(s) => Cow::Borrowed(s),
            None => kernel_names::display(raw, NameStyle::Short),
        }
    }

    /// `raw` in the spelling `style`, short names from this set.
    pub fn display<'a>(&'a self, raw: &'a str, style: NameStyle) -> Cow<'a, str> {
        match style {
            NameStyle::Short => self.short(raw),
            _ => kernel_names::display(raw, style),
        }
    }
}

/// Any short names still shared (a label equal to another kernel's name, a
/// hash prefix shared) get longer hashes until none is.
fn unique(short: &mut HashMap<String, String>) {
    let mut digits: HashMap<String, usize> = HashMap::new();
    loop {
        let mut by_name: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (raw, s) in short.iter() {
            by_name.entry(s).or_default().push(raw);
        }
        let shared: Vec<String> = by_name.values().filter(|v| v.len() > 1).flatten().map(|r| r.to_string()).collect();
        if shared.is_empty() {
            return;
        }
        for raw in shared {
            let d = digits.entry(raw.clone()).or_insert(5);
            *d += 1;
            let base = kernel_names::display(&raw, NameStyle::Short).into_owned();
            let s = if *d > 16 { raw.clone() } else { hashed(&base, &raw, *d) };
            short.insert(raw, s);
        }
    }
}

/// `base` told apart by `label`: inside its elided template arguments
/// (`k<…label…>`), else after it in parentheses (`k(…label…)`).
fn with_label(base: &str, label: &str) -> String {
    match base.strip_suffix("<…>") {
        Some(head) => format!("{head}<…{label}…>"),
        None => format!("{base}(…{label}…)"),
    }
}

/// `base#` and the first `digits` hex digits of the FNV-1a hash of `raw`.
fn hashed(base: &str, raw: &str, digits: usize) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in raw.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let hex = format!("{h:016x}");
    format!("{base}#{}", &hex[..digits.min(16)])
}

/// The longest label; kernels that only a longer part of their names tells
/// apart get a hash.
pub const LABEL_MAX: usize = 64;

/// Words that name no type or function of the kernel's own.
const NOT_NAMES: &[&str] = &[
    "anonymous",
    "auto",
    "class",
    "const",
    "decltype",
    "enum",
    "false",
    "lambda",
    "namespace",
    "operator",
    "signed",
    "struct",
    "true",
    "unsigned",
    "void",
    "volatile",
];

/// Builtin types: a label only when nothing else tells kernels apart.
const BUILTINS: &[&str] = &["bool", "char", "double", "float", "int", "long", "short"];

/// The labels that may tell `raw` apart, most preferred first: names of
/// types and functions (in order of appearance, namespaces left out),
/// template instances and lambdas without namespaces (shortest first),
/// builtin types. Empty when `raw` does not demangle.
fn candidates(raw: &str) -> Vec<String> {
    let Some(full) = kernel_names::demangle(raw) else {
        return Vec::new();
    };
    let text = without_namespaces(&full);
    let b = text.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut names: Vec<String> = Vec::new();
    let mut builtins: Vec<String> = Vec::new();
    let mut groups: Vec<String> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if ident(b[i]) && !b[i].is_ascii_digit() && (i == 0 || !ident(b[i - 1])) {
            let start = i;
            while i < b.len() && ident(b[i]) {
                i += 1;
            }
            let w = &text[start..i];
            if BUILTINS.contains(&w) {
                builtins.push(w.to_string());
            } else if !NOT_NAMES.contains(&w) {
                names.push(w.to_string());
            }
            if b.get(i) == Some(&b'<')
                && let Some(end) = closing(b, i, b'<', b'>')
            {
                groups.push(text[start..=end].to_string());
            }
            continue;
        }
        if b[i] == b'{'
            && let Some(end) = closing(b, i, b'{', b'}')
        {
            groups.push(text[i..=end].to_string());
        }
        i += 1;
    }
    // a lambda's parameters say more than its number
    groups.sort_by_key(|g| (g.starts_with("{lambda()"), g.len()));
    let mut out: Vec<String> = Vec::new();
    for c in names.into_iter().chain(groups).chain(builtins) {
        if c.chars().count() <= LABEL_MAX && !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// The index of the `close` that matches the `open` at `at`.
fn closing(b: &[u8], at: usize, open: u8, close: u8) -> Option<usize> {
    let mut depth = 0i32;
    for (j, &c) in b.iter().enumerate().skip(at) {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}

/// `s` without its namespace and class qualifiers (`at::native::`,
/// `(anonymous namespace)::`); the `::` after a function's parameters or a
/// lambda stays.
fn without_namespaces(s: &str) -> String {
    let s = s.replace("(anonymous namespace)::", "");
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        if ident(b[i]) && (i == 0 || !ident(b[i - 1])) {
            let start = i;
            while i < b.len() && ident(b[i]) {
                i += 1;
            }
            if s[i..].starts_with("::") {
                i += 2;
            } else {
                out.push_str(&s[start..i]);
            }
            continue;
        }
        let c = s[i..].chars().next().expect("in bounds");
        out.push(c);
        i += c.len_utf8();
    }
    out
}

#[cfg(test)]
#[path = "short_names_tests.rs"]
mod tests;
