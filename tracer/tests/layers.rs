//! The layers of docs/architecture.md hold: every `crate::` path in
//! tracer/src points down or sideways within its layer, never up, and no
//! two files' modules import each other, directly or around a circle
//! (`crate::` and `super::` paths, a module and those it contains aside).
//!
//! `cli` → `collect`, `export` → `analysis` → `decode`; `error` is a leaf
//! any layer may use. Test code (`#[cfg(test)] mod …` to the end of a file,
//! `*_tests.rs`, `tests.rs`, `fuzz/`) may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A layer's rank: a file may import its own layer and layers of lower
/// rank; `collect` and `export` share a rank but not each other.
fn rank(layer: &str) -> Option<u8> {
    Some(match layer {
        "error" => 0,
        "decode" => 1,
        "analysis" => 2,
        "collect" | "export" => 3,
        "cli" => 4,
        _ => return None,
    })
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
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
fn code(text: &str) -> String {
    let cut = text.find("#[cfg(test)]\nmod ").map_or(text, |i| &text[..i]);
    cut.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// Every `crate::a::b` path in `code`, as (a, b) (b empty for `crate::a;`).
fn crate_paths(code: &str) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        if i > 0 && code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue; // e.g. tracer_crate::
        }
        let rest = &code[i + 7..];
        let word = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
        let a = word(rest);
        let b = rest[a.len()..].strip_prefix("::").map(word).unwrap_or_default();
        v.push((a, b));
    }
    v
}

/// `cli/analysis.rs` → ("cli", ["cli", "analysis"]); `export/plot/mod.rs` →
/// ("export", ["export", "plot"]); `error.rs` → ("error", ["error"]).
fn place(rel: &Path) -> (String, Vec<String>) {
    let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().trim_end_matches(".rs").to_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    (parts[0].clone(), parts)
}

/// The module paths a path's words can name: `a::b::Item` → the longest of
/// `a::b`, `a` that is a module of the crate.
fn module_of(words: &[String], known: &BTreeSet<String>) -> Option<String> {
    (1..=words.len()).rev().map(|n| words[..n].join("::")).find(|m| known.contains(m))
}

/// The words of every `crate::…` and `super::…` path in `code`, resolved
/// against `module` (the file's module path) to absolute module words.
fn paths_from(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let word = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        for (i, _) in code.match_indices(start) {
            if i > 0 && code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue; // tracer_crate::, super::super:: (read from its first super)
            }
            let mut base: Vec<String> =
                if start == "crate::" { Vec::new() } else { module[..module.len() - 1].to_vec() };
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
fn test_files(files: &[PathBuf]) -> Vec<PathBuf> {
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

struct Edges {
    upward: Vec<String>,
    graph: BTreeMap<String, BTreeSet<String>>,
}

fn edges() -> Edges {
    let mut files = Vec::new();
    rs_files(&src(), &mut files);
    files.sort();
    let tests = test_files(&files);
    let files: Vec<&PathBuf> = files
        .iter()
        .filter(|f| {
            let rel = f.strip_prefix(src()).unwrap();
            !tests.iter().any(|t| f.starts_with(t)) && rel != Path::new("main.rs") && rel != Path::new("lib.rs")
        })
        .collect();
    let known: BTreeSet<String> = files.iter().map(|f| place(f.strip_prefix(src()).unwrap()).1.join("::")).collect();
    let mut upward = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src()).unwrap();
        let (layer, module) = place(rel);
        let from = rank(&layer).unwrap_or_else(|| panic!("{}: not in a layer of lib.rs", rel.display()));
        let code = code(&std::fs::read_to_string(f).unwrap());
        for (a, b) in crate_paths(&code) {
            let Some(to) = rank(&a) else { panic!("{}: crate::{a} is not a layer", rel.display()) };
            let sideways = a != layer && to == from;
            if to > from || sideways {
                upward.push(format!("{} ({layer}) imports crate::{a}::{b}", rel.display()));
            }
        }
        let me = module.join("::");
        for words in paths_from(&code, &module) {
            let Some(target) = module_of(&words, &known) else { continue };
            // A module and the modules it contains use each other freely.
            if target != me && !me.starts_with(&format!("{target}::")) && !target.starts_with(&format!("{me}::")) {
                graph.entry(me.clone()).or_default().insert(target);
            }
        }
    }
    upward.sort();
    upward.dedup();
    Edges { upward, graph }
}

/// A cycle in `g`, as its path, if there is one.
fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_owned(), 1);
        stack.push(n.to_owned());
        for m in g.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let i = stack.iter().position(|x| x == m).unwrap();
                    let mut c = stack[i..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(m, g, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0
            && let Some(c) = visit(n, g, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

#[test]
fn no_upward_imports() {
    let e = edges();
    assert!(e.upward.is_empty(), "imports against the layers:\n{}", e.upward.join("\n"));
    // The check sees the imports: the cli imports every layer below it.
    for l in ["collect", "export", "analysis", "decode"] {
        assert!(e.graph.keys().any(|k| k.starts_with("cli")) && e.graph.values().flatten().any(|t| t.starts_with(l)));
    }
}

#[test]
fn no_import_cycles_between_modules() {
    let e = edges();
    if let Some(c) = find_cycle(&e.graph) {
        panic!("import cycle: {}", c.join(" → "));
    }
}

#[test]
fn the_check_finds_what_it_should() {
    assert_eq!(
        crate_paths("use crate::decode::calls::Assembler;\nlet x = crate::error::UsageError(s);"),
        [("decode".to_owned(), "calls".to_owned()), ("error".to_owned(), "UsageError".to_owned())]
    );
    assert_eq!(code("use a;\n// crate::cli\n#[cfg(test)]\nmod tests { crate::cli }"), "use a;");
    let g: BTreeMap<String, BTreeSet<String>> = [("a", "b"), ("b", "c"), ("c", "a")]
        .into_iter()
        .map(|(x, y)| (x.to_owned(), BTreeSet::from([y.to_owned()])))
        .collect();
    assert_eq!(find_cycle(&g).unwrap(), ["a", "b", "c", "a"]);
    assert_eq!(place(Path::new("export/plot/mod.rs")), ("export".into(), vec!["export".to_owned(), "plot".to_owned()]));
    let me: Vec<String> = ["export", "plot", "compare"].map(String::from).to_vec();
    let known: BTreeSet<String> = ["export::plot", "export::plot::numbers", "analysis::stats"].map(String::from).into();
    let found: Vec<Option<String>> =
        paths_from("use super::numbers::{Tally};\nlet u = crate::analysis::stats::union(v);", &me)
            .iter()
            .map(|w| module_of(w, &known))
            .collect();
    assert_eq!(found, [Some("analysis::stats".to_owned()), Some("export::plot::numbers".to_owned())]);
}
