#!/usr/bin/env python3
"""Compares two CUDA graphs written by cudaGraphDebugDotPrint (verbose):
the program's own (torch's CUDAGraph.debug_dump) and replay's rebuilt one
(replay --graph-dot DIR). Prints, for each: node kinds, edges and edge
styles, how many kernel nodes carry each field value that is not an address,
handle or kernel-specific figure, and the first kernel node's label; then the
field values found in one graph's kernel nodes and not the other's.

    python3 graph_dot_diff.py program.dot replay/graph-0.dot
"""
import collections
import re
import sys

# labels span lines: the whole file is matched at once
NODE = re.compile(r'"([\w.]+)"\s*\[[^\[]*?label="((?:[^"\\]|\\.)*)"', re.S)
EDGE = re.compile(r'"([\w.]+)"\s*->\s*"([\w.]+)"\s*(\[([^\]]*)\])?')
VARYING = re.compile(r"^(0x[0-9a-f]+|-?\d+(\.\d+)?|[\w.]*(node|graph)_\d+[\w.]*)$", re.I)
# fields whose values differ per node or per process, not by how the node runs
SKIP = {"id", "node handle", "func", "kernelparams", "params", "kernel", "name", "function"}


def parse(path):
    with open(path, errors="replace") as f:
        text = f.read()
    edges = [(e.group(1), e.group(2), (e.group(4) or "").strip()) for e in EDGE.finditer(text)]
    nodes = {n.group(1): n.group(2) for n in NODE.finditer(text)}
    return nodes, edges


def tokens(label):
    t = label.replace("\n", "|").replace("\\n", "|").replace("\\l", "|").replace("{", "|").replace("}", "|")
    return [x.strip() for x in t.split("|") if x.strip()]


def fields(toks):
    """(key, value) for consecutive tokens key | value with key a word."""
    out = []
    for k, v in zip(toks, toks[1:]):
        if re.fullmatch(r"[A-Za-z][A-Za-z _]*", k) and k.lower() not in SKIP:
            out.append((k, v if not VARYING.match(v) or len(v) <= 3 else "<n>"))
    return out


def summary(path):
    nodes, edges = parse(path)
    kinds = collections.Counter(tokens(l)[0] if tokens(l) else "?" for l in nodes.values())
    styles = collections.Counter(s for _, _, s in edges)
    kernel = [l for l in nodes.values() if tokens(l) and "KERNEL" in tokens(l)[0].upper()]
    vals = collections.Counter(f for l in kernel for f in set(fields(tokens(l))))
    return nodes, edges, kinds, styles, kernel, vals


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    s = [summary(p) for p in sys.argv[1:]]
    for p, (nodes, edges, kinds, styles, kernel, vals) in zip(sys.argv[1:], s):
        print(f"== {p}: {len(nodes)} nodes, {len(edges)} edges")
        print("  node kinds: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
        print("  edge attributes: " + ", ".join(f"[{k or 'none'}] {n}" for k, n in styles.most_common(6)))
        print(f"  kernel nodes: {len(kernel)}; field values (nodes carrying them):")
        for (k, v), n in sorted(vals.items()):
            print(f"    {k} = {v[:60]}: {n}")
        if kernel:
            print("  first kernel node: " + " | ".join(tokens(kernel[0]))[:1500])
    a, b = s[0][5], s[1][5]
    print("== field values of kernel nodes in one graph only (or in different numbers of nodes)")
    for key in sorted(set(a) | set(b)):
        if a.get(key, 0) != b.get(key, 0):
            print(f"  {key[0]} = {key[1][:60]}: {a.get(key, 0)} vs {b.get(key, 0)}")


if __name__ == "__main__":
    main()
