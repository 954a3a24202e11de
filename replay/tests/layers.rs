//! replay's top-level modules (cli, run, plan, recording, exec, report,
//! gpu_time, energy, …) import each other one way only: this test reads
//! replay/src, builds the graph of which top-level module names which
//! (`use crate::X`, `crate::X::…`, `replay::X::…` from the binary's modules,
//! `super::…` resolved from the file and its inline modules) and fails on a
//! cycle, naming it and the lines that make each edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One import of a top-level module by another: where it is written.
#[derive(Clone, Debug)]
struct Site {
    file: String,
    line: usize,
    text: String,
}

/// from -> to -> the sites that import `to` from `from`.
type Graph = BTreeMap<String, BTreeMap<String, Vec<Site>>>;

#[test]
fn no_import_cycle_between_top_level_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src);
    assert!(graph.contains_key("plan") && graph.contains_key("run"), "the graph misses modules: {graph:?}");

    let checked = graph;
    let cycles = cycles(&checked);
    if !cycles.is_empty() {
        let mut msg = String::from("import cycles between replay's top-level modules:\n");
        for c in &cycles {
            msg += &format!("  {}\n", c.join(" -> "));
            for w in c.windows(2) {
                let s = &checked[&w[0]][&w[1]][0];
                msg += &format!("    {} -> {}: {}:{}: {}\n", w[0], w[1], s.file, s.line, s.text);
            }
        }
        panic!("{msg}");
    }
}

/// The graph of replay/src: for each top-level module, the top-level modules its files name.
fn module_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    let mut g = Graph::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap().to_string_lossy().replace('\\', "/");
        let module = file_module(&rel);
        let Some(top) = module.first().cloned() else { continue }; // lib.rs, main.rs: the roots
        let text = std::fs::read_to_string(&f).unwrap();
        let edges = g.entry(top.clone()).or_default();
        for (to, site) in imports(&rel, &module, &text) {
            if to != top {
                edges.entry(to).or_default().push(site);
            }
        }
    }
    g
}

/// Every `.rs` file under `dir`.
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

/// The module path of a file relative to src (`plan/deps.rs` -> [plan, deps], `plan/mod.rs` -> [plan]).
fn file_module(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The top-level modules a file names, each with its site.
fn imports(rel: &str, module: &[String], text: &str) -> Vec<(String, Site)> {
    let code = strip_comments_and_strings(text);
    let mut out = Vec::new();
    // The inline modules (`mod tests { … }`) open at each brace depth.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    for (i, line) in code.lines().enumerate() {
        let site =
            || Site { file: rel.to_owned(), line: i + 1, text: text.lines().nth(i).unwrap_or("").trim().to_owned() };
        let here: Vec<String> = module.iter().cloned().chain(inline.iter().map(|m| m.0.clone())).collect();
        for (at, _) in line.match_indices("crate::").chain(line.match_indices("replay::")) {
            if line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let rest = &line[at..].split_once("::").unwrap().1;
            for name in first_segments(rest) {
                out.push((name, site()));
            }
        }
        for (at, _) in line.match_indices("super::") {
            if line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut rest = &line[at..];
            let mut up = 0;
            while let Some(r) = rest.strip_prefix("super::") {
                up += 1;
                rest = r;
            }
            let base = &here[..here.len().saturating_sub(up)];
            let names = match base.first() {
                Some(top) => vec![top.clone()],
                None => first_segments(rest),
            };
            for name in names {
                out.push((name, site()));
            }
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(k) = words.iter().position(|w| *w == "mod")
            && words.get(k + 2) == Some(&"{")
        {
            inline.push((words[k + 1].to_owned(), depth));
        }
        for c in line.chars() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if inline.last().is_some_and(|m| m.1 == depth) {
                        inline.pop();
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The first path segment after `X::`: `plan::Plan` -> [plan]; `{plan, recording::Trace}` -> [plan, recording].
fn first_segments(rest: &str) -> Vec<String> {
    let ident = |s: &str| s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let Some(group) = rest.strip_prefix('{') else {
        return vec![ident(rest)].into_iter().filter(|s| !s.is_empty()).collect();
    };
    let mut names = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                names.push(ident(&group[start..i]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                names.push(ident(&group[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    names.retain(|n| !n.is_empty() && n != "self");
    names
}

/// The text with comments, string and char literals blanked (line breaks kept, so that line numbers hold).
fn strip_comments_and_strings(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut level = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    level += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    level -= 1;
                    out.push_str("  ");
                    i += 2;
                    if level == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !prev_is_ident(&b, i) {
            // raw string r"…", r#"…"#
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            while j < b.len() && !(b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#'))) {
                j += 1;
            }
            let end = (j + 1 + hashes).min(b.len());
            out.extend(b[i..end].iter().map(|&c| blank(c)));
            i = end;
        } else if c == '"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != '"' {
                j += if b[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            out.extend(b[i..end].iter().map(|&c| blank(c)));
            i = end;
        } else if c == '\'' && char_literal_len(&b[i..]).is_some() {
            let n = char_literal_len(&b[i..]).unwrap();
            out.extend(std::iter::repeat_n(' ', n));
            i += n;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_is_ident(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// The length of a char literal at the start of `b` ('x', '\n', '\'', '\u{7b}'), None for a lifetime.
fn char_literal_len(b: &[char]) -> Option<usize> {
    match (b.get(1)?, b.get(2)?) {
        ('\\', _) => (2..b.len().min(12)).find(|&j| b[j] == '\'').map(|j| j + 1),
        (_, '\'') => Some(3),
        _ => None,
    }
}

/// The elementary cycles of the graph that go through each strongly connected component, one per
/// component (the shortest through its first node), each as [a, b, …, a].
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&String> = g.keys().chain(g.values().flat_map(|t| t.keys())).collect();
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for t in g.get(&n).into_iter().flat_map(|t| t.keys()) {
                if seen.insert(t.clone()) {
                    todo.push(t.clone());
                }
            }
        }
        seen
    };
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in nodes {
        if done.contains(n) || !reach(n).contains(n) {
            continue;
        }
        // Breadth-first from n back to n: the shortest cycle through it.
        let mut prev: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([n.clone()]);
        'bfs: while let Some(x) = queue.pop_front() {
            for t in g.get(&x).into_iter().flat_map(|t| t.keys()) {
                if t == n {
                    prev.insert(format!("{n}#end"), x.clone());
                    break 'bfs;
                }
                if !prev.contains_key(t) {
                    prev.insert(t.clone(), x.clone());
                    queue.push_back(t.clone());
                }
            }
        }
        let mut c = vec![n.clone()];
        let mut x = prev[&format!("{n}#end")].clone();
        while &x != n {
            c.push(x.clone());
            x = prev[&x].clone();
        }
        c.push(n.clone());
        c.reverse();
        let component: BTreeSet<String> = reach(n).into_iter().filter(|m| reach(m).contains(n)).collect();
        done.extend(component);
        out.push(c);
    }
    out
}

#[test]
fn the_parser_sees_grouped_super_and_inline_module_paths() {
    let text = "use crate::{plan::Plan, recording::{self, Trace}};\n\
                // use crate::energy;\n\
                let s = \"crate::report\";\n\
                fn f() { super::super::exec::run(); }\n\
                mod tests {\n    use super::*;\n    use super::super::gpu_time;\n}\n";
    let found: Vec<String> = imports("a/b.rs", &["a".into(), "b".into()], text).into_iter().map(|x| x.0).collect();
    assert_eq!(found, ["plan", "recording", "exec", "a", "a"]);
    let root: Vec<String> = imports("cli.rs", &["cli".into()], "use super::run::Mode;\nuse replay::plan;\n")
        .into_iter()
        .map(|x| x.0)
        .collect();
    assert_eq!(root, ["run", "plan"]);
}
