#!/usr/bin/env python3
"""Where a default recording's inferred busy time goes wrong: one default
trace (adaptive windows + the durations library) against a full
`--gpu-timestamps` trace of the same program (another process).

    python3 experiments/gpu-default/durations_diag.py DEFAULT.jsonl FULL.jsonl [--phase steady] [--top 15]

Prints the default trace's windows (start and length relative to the first
line, records, new keys) beside the phase markers; the launch lines by kind
(kernel launches, graph launches, …); and, for the launches of the phase,
per kernel (name, grid, block, shared memory): launches, the duration the
default trace has for it (its durations line's entry, exact geometry or by
name, and the median of its own windows' records) and the full trace's
median. The sums say how far each basis puts the phase's busy time from the
full run's.
"""
import argparse
import collections
import gzip
import json
import statistics


def lines(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        for line in f:
            try:
                yield json.loads(line)
            except ValueError:
                continue


def geom(d):
    return (tuple(d.get("grid") or ()), tuple(d.get("block") or ()), d.get("shared_mem", d.get("sharedMemBytes", 0)))


def phases(markers, t_end):
    out = []
    for i, (ts, label) in enumerate(markers):
        out.append((label, ts, markers[i + 1][0] if i + 1 < len(markers) else t_end))
    return out


def load(path):
    t = {"types": collections.Counter(), "markers": [], "windows": [], "launches": [], "gpu": collections.defaultdict(list),
         "durations": None, "header": None, "footer": None, "t0": None, "t_end": 0, "graph_kernels": collections.Counter()}
    for d in lines(path):
        ty, op = d.get("type"), d.get("op")
        ts = d.get("ts") or 0
        if ty not in ("header", "footer", "durations") and ts:
            t["t0"] = ts if t["t0"] is None else min(t["t0"], ts)
            t["t_end"] = max(t["t_end"], ts)
        t["types"][(ty, op)] += 1
        if ty == "header":
            t["header"] = d
        elif ty == "footer":
            t["footer"] = d
        elif ty == "durations":
            t["durations"] = d
        elif ty == "marker" and op == "phase":
            t["markers"].append((ts, d.get("label")))
        elif ty == "gpu_window" or (ty == "gpu" and op == "window"):
            t["windows"].append(d)
        elif ty == "kernel" and op == "launch":
            t["launches"].append((ts, d.get("kernel") or "?", geom(d)))
        elif ty == "gpu" and op == "kernel":
            t["gpu"][(d.get("name"), geom(d))].append((ts, d.get("duration_us") or 0.0))
        if ty == "graph" or (op and "graph" in op):
            for k in ("kernel", "kernels"):
                if k in d:
                    t["graph_kernels"][str(d[k])[:60]] += 1
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("default")
    ap.add_argument("full")
    ap.add_argument("--phase", default="steady")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    dft, full = load(a.default), load(a.full)
    for name, t in (("default", dft), ("full", full)):
        print(f"== {name}: {getattr(a, name)}")
        print("  lines by (type, op):", ", ".join(f"{k[0]}/{k[1]}={v}" for k, v in t["types"].most_common(25)))
        g = (t["footer"] or {}).get("gpu_timestamps")
        print("  footer gpu_timestamps:", json.dumps(g)[:1500] if g else None)
        hg = (t["header"] or {}).get("gpu_timestamps")
        print("  header gpu_timestamps:", json.dumps(hg)[:600] if hg else None)
        if t["graph_kernels"]:
            print("  graph lines naming kernels:", t["graph_kernels"].most_common(5))
        t0 = t["t0"] or 0
        for label, s, e in phases(t["markers"], t["t_end"]):
            n = sum(1 for ts, _, _ in t["launches"] if s <= ts < e)
            print(f"  phase {label}: {(s - t0) / 1e9:.3f}..{(e - t0) / 1e9:.3f} s, {n} kernel launch lines")
        for w in t["windows"]:
            s = w.get("ts") or w.get("start") or 0
            dur = w.get("duration_us") or ((w.get("end_ts") or s) - s) / 1e3
            rest = {k: w[k] for k in ("records", "new_keys", "attach_us", "detach_us", "pid") if k in w}
            print(f"  window at {(s - t0) / 1e9:.3f} s for {dur / 1e3:.1f} ms {rest}")
    # the phase in the default trace
    ph = [p for p in phases(dft["markers"], dft["t_end"]) if p[0] == a.phase]
    fph = [p for p in phases(full["markers"], full["t_end"]) if p[0] == a.phase]
    if not ph or not fph:
        print(f"no phase {a.phase!r} in both traces")
        return
    _, s, e = ph[-1]
    _, fs, fe = fph[-1]
    launches = collections.Counter((n, g) for ts, n, g in dft["launches"] if s <= ts < e)
    flaunch = collections.Counter((n, g) for ts, n, g in full["launches"] if fs <= ts < fe)
    print(f"== phase {a.phase}: default {(e - s) / 1e6:.1f} ms, {sum(launches.values())} launches, "
          f"{len(launches)} kernels; full {(fe - fs) / 1e6:.1f} ms, {sum(flaunch.values())} launches")
    lib_exact, lib_name = {}, collections.defaultdict(list)
    for k in ((dft["durations"] or {}).get("kernels") or []):
        g = (tuple(k.get("grid") or ()), tuple(k.get("block") or ()), k.get("shared_mem", 0))
        lib_exact[(k["kernel"], g)] = k["median_ns"] / 1e3
        lib_name[k["kernel"]].append((k.get("count", 1), k["median_ns"] / 1e3))

    def by_name(n):
        v = lib_name.get(n)
        if not v:
            return None
        tot = sum(c for c, _ in v)
        return sum(c * m for c, m in v) / tot

    def med(xs):
        return statistics.median(xs) if xs else None

    fmed = {k: med([d for ts, d in v if fs <= ts < fe] or [d for _, d in v]) for k, v in full["gpu"].items()}
    fmed_name = collections.defaultdict(list)
    for (n, g), v in full["gpu"].items():
        fmed_name[n].extend(d for _, d in v)
    wmed = {k: med([d for _, d in v]) for k, v in dft["gpu"].items()}
    rows = []
    sums = collections.Counter()
    for (n, g), c in launches.items():
        f = fmed.get((n, g)) or med(fmed_name.get(n, []))
        lx = lib_exact.get((n, g))
        ln = by_name(n)
        w = wmed.get((n, g))
        lib = lx if lx is not None else ln
        rows.append((c * (f or 0), n, g, c, f, lx, ln, w))
        if f is not None:
            sums["full"] += c * f
            sums["lib"] += c * (lib if lib is not None else 0)
            sums["lib_missing"] += c if lib is None else 0
            sums["window"] += c * (w if w is not None else (lib or 0))
    print(f"  busy by the full run's medians {sums['full'] / 1e3:.1f} ms; by the durations line {sums['lib'] / 1e3:.1f} ms "
          f"({sums['lib_missing']} launches without an entry); windows then line {sums['window'] / 1e3:.1f} ms")
    print("  launches | full µs | line exact µs | line by name µs | windows µs | grid block smem | kernel")
    for _, n, g, c, f, lx, ln, w in sorted(rows, reverse=True)[: a.top]:
        fmt = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
        print(f"  {c:7d} | {fmt(f):>8} | {fmt(lx):>8} | {fmt(ln):>8} | {fmt(w):>8} | {g} | {n[:90]}")
    missing = [(c, n) for (n, g), c in launches.items() if (n, g) not in full["gpu"] and n not in fmed_name]
    if missing:
        print("  kernels of the phase the full run never measured:", sorted(missing, reverse=True)[:5])


if __name__ == "__main__":
    main()
