//! The layers of docs/architecture.md hold: every `crate::` path in
//! tracer/src points down or sideways within its layer, never up. And no
//! crate of the workspace has an import circle between its files
//! (layers/graph.rs says what a circle is: parent and child files count,
//! a module using its own parts does not).
//!
//! `cli` → `collect`, `export` → `analysis` → `decode`; `error` is a leaf
//! any layer may use. Test code (`#[cfg(test)] mod …` to the end of a file,
//! `*_tests.rs`, `tests.rs`, `fuzz/`) may reach anywhere.

#[path = "layers/graph.rs"]
mod graph;

use std::collections::BTreeSet;
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

fn upward() -> Vec<String> {
    let mut files = Vec::new();
    graph::rs_files(&src(), &mut files);
    files.sort();
    let tests = graph::test_files(&files);
    let mut upward = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(src()).unwrap();
        if tests.iter().any(|t| f.starts_with(t)) || rel == Path::new("main.rs") || rel == Path::new("lib.rs") {
            continue;
        }
        let (layer, _) = graph::place(rel);
        let from = rank(&layer).unwrap_or_else(|| panic!("{}: not in a layer of lib.rs", rel.display()));
        let code = graph::code(&std::fs::read_to_string(f).unwrap());
        for (a, b) in crate_paths(&code) {
            let Some(to) = rank(&a) else { panic!("{}: crate::{a} is not a layer", rel.display()) };
            let sideways = a != layer && to == from;
            if to > from || sideways {
                upward.push(format!("{} ({layer}) imports crate::{a}::{b}", rel.display()));
            }
        }
    }
    upward.sort();
    upward.dedup();
    upward
}

/// The crates whose `src/` the circle check reads.
const CRATES: [&str; 7] =
    ["tracer", "tracer-common", "tracer-ebpf", "tracer-format", "tracer-cupti", "replay", "xtask"];

#[test]
fn no_upward_imports() {
    let upward = upward();
    assert!(upward.is_empty(), "imports against the layers:\n{}", upward.join("\n"));
    // The check sees the imports: the cli imports every layer below it.
    let g = graph::crate_graph(&src());
    for l in ["collect", "export", "analysis", "decode"] {
        assert!(g.iter().any(|(k, v)| k.starts_with("cli") && v.iter().any(|t| t.starts_with(l))), "cli → {l}");
    }
}

#[test]
fn no_import_circles_in_any_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut circles = Vec::new();
    for krate in CRATES {
        let src = root.join(krate).join("src");
        let g = graph::crate_graph(&src);
        assert!(g.len() > 1, "{krate}: no modules read");
        if let Some(c) = graph::find_circle(&g) {
            let file = |m: &String| {
                let rel = m.replace("::", "/");
                let f =
                    if src.join(format!("{rel}.rs")).exists() { format!("{rel}.rs") } else { format!("{rel}/mod.rs") };
                format!("{krate}/src/{f}")
            };
            circles.push(c.iter().map(file).collect::<Vec<_>>().join(" → "));
        }
    }
    assert!(circles.is_empty(), "import circles:\n{}", circles.join("\n"));
}

#[test]
fn the_check_finds_what_it_should() {
    assert_eq!(
        crate_paths("use crate::decode::calls::Assembler;\nlet x = crate::error::UsageError(s);"),
        [("decode".to_owned(), "calls".to_owned()), ("error".to_owned(), "UsageError".to_owned())]
    );
    assert_eq!(graph::code("use a;\n// crate::cli\n#[cfg(test)]\nmod tests { crate::cli }"), "use a;");
    assert_eq!(
        graph::place(Path::new("export/plot/mod.rs")),
        ("export".into(), vec!["export".to_owned(), "plot".to_owned()])
    );
    let me: Vec<String> = ["export", "plot", "compare"].map(String::from).to_vec();
    let known: BTreeSet<String> = ["export::plot", "export::plot::numbers", "analysis::stats"].map(String::from).into();
    let found: Vec<Option<String>> =
        graph::paths_from("use super::numbers::{Tally};\nlet u = crate::analysis::stats::union(v);", &me, &[])
            .iter()
            .map(|w| graph::module_of(w, &known))
            .collect();
    assert_eq!(found, [Some("analysis::stats".to_owned()), Some("export::plot::numbers".to_owned())]);
}

/// A graph from (file, file it imports) pairs.
fn graph_of(edges: &[(&str, &str)]) -> graph::Graph {
    let mut g = graph::Graph::new();
    for (x, y) in edges {
        g.entry(x.to_string()).or_default().insert(y.to_string());
        g.entry(y.to_string()).or_default();
    }
    g
}

#[test]
fn the_circle_finder_sees_parent_and_child_files() {
    // A parent's own children, its re-exports and `self::` are paths; `mod c;` is none.
    let me: Vec<String> = vec!["p".to_owned()];
    let code = "mod c;\npub(crate) mod d;\npub use c::Open;\nfn f(x: d::Gap) { self::g(); a::c::h() }";
    let children = graph::declared_children(code);
    assert_eq!(children, ["c", "d"]);
    let words: Vec<String> = graph::paths_from(code, &me, &children).iter().map(|w| w.join("::")).collect();
    assert_eq!(words, ["p::g", "p::c::Open", "p::d::Gap"]);
    // Three siblings in a circle.
    assert_eq!(graph::find_circle(&graph_of(&[("a", "b"), ("b", "c"), ("c", "a")])).unwrap(), ["a", "b", "c", "a"]);
    // Three files in a circle through a parent/child edge (model.rs → model/graphs.rs →
    // timeline.rs → model.rs), the child also reading its parent.
    let g = graph_of(&[("m", "m::g"), ("m::g", "t"), ("t", "m"), ("m::g", "m")]);
    assert_eq!(graph::find_circle(&g).unwrap(), ["m::g", "t", "m", "m::g"]);
    // A parent that only declares its child, the child reading the parent: no circle.
    assert_eq!(graph::find_circle(&graph_of(&[("p::c", "p")])), None);
    // A parent holding its children's types and re-exporting them, each child reading
    // the parent (`super::`): a module and its own parts, no circle.
    let hub = [("p", "p::a"), ("p", "p::b"), ("p::a", "p"), ("p::b", "p"), ("p::b", "p::a"), ("q", "p")];
    assert_eq!(graph::find_circle(&graph_of(&hub)), None);
    // Two siblings in a circle below their parent, whose file is not in it.
    let g = graph_of(&[("p", "p::a"), ("p::a", "p::b"), ("p::b", "p::a")]);
    assert_eq!(graph::find_circle(&g).unwrap(), ["p::a", "p::b", "p::a"]);
}
