//! The file-level import graph of one crate's `src/`, and the circle finder.
//!
//! A file is a node, named by its module path (`analysis::model` for
//! `analysis/model.rs` or `analysis/model/mod.rs`); the crate root (lib.rs,
//! main.rs) is left out (it declares every module) and so is test code
//! (`#[cfg(test)] mod …` to the end of a file, files of `#[cfg(test)] mod
//! NAME;`, `tests.rs`, `*_tests.rs`). An edge a → b for every path in a's
//! code that names b's module: `crate::…`, `super::…`, `self::…`, and
//! `child::…` for a child a declares with `mod child;`. The declaration
//! itself is no edge; a re-export (`pub use child::X`) is an edge a → child,
//! and a child reading `super::Y` is an edge child → parent.
//!
//! A circle is a cycle of files none of which contains all the others. A
//! module and its own parts may use each other (a parent that declares and
//! re-exports its children, or holds their types, while they read its
//! items through `super::`: the ordinary Rust module): a cycle all of whose
//! files lie in the module of one of them is allowed. Any cycle that leaves
//! it (`model.rs` → `model/graphs.rs` → `timeline.rs` → `model.rs`) is a
//! circle, and so is any cycle among siblings that does not pass through
//! their parent.
//!
//! Found as: for every edge x → y where neither module contains the other,
//! a path back y → … → x through files strictly inside the modules' nearest
//! common module (its own file excluded); such a cycle's files have no
//! member containing the rest, and every circle has such an edge.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// Module path → the modules its file imports.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

pub fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The file's code without its test module and comments.
pub fn code(text: &str) -> String {
    let cut = text.find("#[cfg(test)]\nmod ").map_or(text, |i| &text[..i]);
    cut.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// `cli/analysis.rs` → ("cli", ["cli", "analysis"]); `export/plot/mod.rs` →
/// ("export", ["export", "plot"]); `error.rs` → ("error", ["error"]).
pub fn place(rel: &Path) -> (String, Vec<String>) {
    let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().trim_end_matches(".rs").to_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    (parts[0].clone(), parts)
}

/// The module paths a path's words can name: `a::b::Item` → the longest of
/// `a::b`, `a` that is a module of the crate.
pub fn module_of(words: &[String], known: &BTreeSet<String>) -> Option<String> {
    (1..=words.len()).rev().map(|n| words[..n].join("::")).find(|m| known.contains(m))
}

fn word(s: &str) -> String {
    s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// The children a file declares with `mod NAME;` (any visibility).
pub fn declared_children(code: &str) -> Vec<String> {
    let mut v = Vec::new();
    for l in code.lines() {
        let mut l = l.trim_start();
        if let Some(r) = l.strip_prefix("pub") {
            l = r.trim_start();
            if l.starts_with('(') {
                l = l.split_once(')').map_or("", |(_, r)| r.trim_start());
            }
        }
        if let Some(rest) = l.strip_prefix("mod ")
            && let Some(name) = rest.trim().strip_suffix(';')
        {
            v.push(name.trim().to_owned());
        }
    }
    v
}

/// The words of every `crate::…`, `super::…`, `self::…` and `CHILD::…` path
/// in `code` (`children`: the modules the file declares), resolved against
/// `module` (the file's module path) to absolute module words.
pub fn paths_from(code: &str, module: &[String], children: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut starts: Vec<(String, Vec<String>)> = vec![
        ("crate::".into(), Vec::new()),
        ("super::".into(), module[..module.len() - 1].to_vec()),
        ("self::".into(), module.to_vec()),
    ];
    for c in children {
        let mut base = module.to_vec();
        base.push(c.clone());
        starts.push((format!("{c}::"), base));
    }
    for (start, base) in &starts {
        for (i, _) in code.match_indices(start.as_str()) {
            if i > 0 && code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue; // tracer_crate::, super::super:: (read from its first super), a::child::
            }
            let mut base = base.clone();
            let mut rest = &code[i + start.len()..];
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            loop {
                let w = word(rest);
                if w.is_empty() {
                    break;
                }
                rest = &rest[w.len()..];
                base.push(w);
                match rest.strip_prefix("::") {
                    Some(r) => rest = r,
                    None => break,
                }
            }
            out.push(base);
        }
    }
    out
}

/// Files of modules declared `#[cfg(test)] mod NAME;` (and everything under them).
pub fn test_files(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        let stem = f.file_stem().unwrap().to_string_lossy();
        let dir = if stem == "mod" || stem == "lib" || stem == "main" {
            f.parent().unwrap().to_owned()
        } else {
            f.with_extension("")
        };
        for (i, _) in text.match_indices("#[cfg(test)]\n") {
            let next = text[i + 13..].trim_start();
            let next = next.strip_prefix("pub ").unwrap_or(next);
            if let Some(rest) = next.strip_prefix("mod ")
                && let Some(name) = rest.split(';').next().filter(|n| !n.contains('{'))
            {
                v.push(dir.join(format!("{name}.rs")));
                v.push(dir.join(name));
            }
        }
    }
    v
}

/// The files of `src` in the graph (no crate root, no test code), sorted.
pub fn module_files(src: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    files.sort();
    let tests = test_files(&files);
    files
        .into_iter()
        .filter(|f| {
            let rel = f.strip_prefix(src).unwrap();
            let stem = f.file_stem().unwrap().to_string_lossy();
            !tests.iter().any(|t| f.starts_with(t))
                && rel != Path::new("main.rs")
                && rel != Path::new("lib.rs")
                && stem != "tests"
                && !stem.ends_with("_tests")
        })
        .collect()
}

/// The import graph of the crate whose sources are `src`.
pub fn crate_graph(src: &Path) -> Graph {
    let files = module_files(src);
    let known: BTreeSet<String> = files.iter().map(|f| place(f.strip_prefix(src).unwrap()).1.join("::")).collect();
    let mut graph = Graph::new();
    for f in &files {
        let module = place(f.strip_prefix(src).unwrap()).1;
        let me = module.join("::");
        let code = code(&std::fs::read_to_string(f).unwrap());
        let children = declared_children(&code);
        let targets = graph.entry(me.clone()).or_default();
        for words in paths_from(&code, &module, &children) {
            if let Some(t) = module_of(&words, &known).filter(|t| *t != me) {
                targets.insert(t);
            }
        }
    }
    graph
}

/// `a` is `b` or contains it.
fn contains(a: &str, b: &str) -> bool {
    a == b || a.is_empty() || b.starts_with(&format!("{a}::"))
}

/// The nearest module containing both (`""`: the crate root).
fn common(a: &str, b: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.split("::").collect(), b.split("::").collect());
    a.iter().zip(&b).take_while(|(x, y)| x == y).map(|(x, _)| *x).collect::<Vec<_>>().join("::")
}

/// A circle in `g` (see the module's doc), as its path from and back to
/// its first file, if there is one.
pub fn find_circle(g: &Graph) -> Option<Vec<String>> {
    for (x, ys) in g {
        for y in ys {
            if contains(x, y) || contains(y, x) {
                continue;
            }
            let inside = common(x, y);
            let within = |n: &str| n != inside && contains(&inside, n);
            // Shortest path y → … → x through files strictly inside `inside`.
            let mut before: BTreeMap<&str, &str> = BTreeMap::new();
            let mut queue = VecDeque::from([y.as_str()]);
            while let Some(n) = queue.pop_front() {
                if n == x {
                    let mut back = vec![x.clone()];
                    let mut at = x.as_str();
                    while at != y {
                        at = before[at];
                        back.push(at.to_owned());
                    }
                    back.push(x.clone());
                    back.reverse();
                    return Some(back);
                }
                for m in g.get(n).into_iter().flatten() {
                    if within(m) && m != y && !before.contains_key(m.as_str()) {
                        before.insert(m, n);
                        queue.push_back(m);
                    }
                }
            }
        }
    }
    None
}
