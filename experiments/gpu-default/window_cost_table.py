#!/usr/bin/env python3
"""What each CUPTI window cost window_cost.cu's batches, against the budget's estimate.

    window_cost_table.py RUNS_DIR > table.md

RUNS_DIR/MODE.rN/ holds batches.txt (`PHASE T0 T1 ITEMS`, CLOCK_MONOTONIC ns),
windows.jsonl (the trace's gpu_window lines: ts, end_ts, records) and
footer.json (the trace's footer). Per run and phase:

- baseline: the median ns per item of the batches clear of every window
  (a window reaches from its start less twice its share of the run's attach
  time and 10 ms, to its end plus twice its share of the detach time and
  10 ms: attach runs before the window's start stamp, detach after its end);
- in window: the median ns per item of the batches inside a window's
  stamps, less the baseline: what attached CUPTI costs each launch, graph
  launch or step (per record: over the records an item makes);
- excess of a window: the batches touching its reach, their time less the
  baseline's for their items: all the window cost the program, attach and
  detach included;
- estimate of a window: what the budget charges it (the footer's attach and
  detach times shared over its windows, tracer_cupti::sample::RECORD_COST_NS
  = 5,000 ns per record).
The windows at cuInit and in the warm-up are outside the phases and not
counted. A fit per phase of excess = fixed + per record x records over the
windows says which part the estimate gets wrong.
"""
import json
import os
import statistics as st
import sys

RECORD_COST_NS = 5_000
RECORDS_PER_ITEM = {"launch": 1, "graph": None, "sync": 1}  # graph: NODES


def load(d):
    batches = []
    with open(os.path.join(d, "batches.txt")) as f:
        for line in f:
            p = line.split()
            if len(p) == 4:
                batches.append((p[0], int(p[1]), int(p[2]), int(p[3])))
    wins = []
    wp = os.path.join(d, "windows.jsonl")
    if os.path.exists(wp):
        for line in open(wp):
            line = line.strip()
            if line:
                w = json.loads(line)
                if w.get("end_ts"):
                    wins.append((w["ts"], w["end_ts"], w.get("records") or 0))
    foot = {}
    fp = os.path.join(d, "footer.json")
    try:
        foot = json.loads(open(fp).read() or "{}")
    except (OSError, ValueError):
        pass
    nodes = 20
    for line in open(os.path.join(d, "stdout")):
        if line.startswith("NODES "):
            nodes = int(line.split()[1])
    return batches, wins, foot, nodes


def fit(points):
    """Least squares excess = a + b * records over (records, excess) points; None with < 3 points."""
    if len(points) < 3:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = st.mean(xs), st.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def analyse(d):
    batches, wins, foot, nodes = load(d)
    g = foot.get("gpu_timestamps") or {}
    nwin = max(g.get("windows") or len(wins) or 1, 1)
    att = (g.get("attach_ns") or 0) / nwin
    det = (g.get("detach_ns") or 0) / nwin
    reach = [(s - 2 * att - 10e6, e + 2 * det + 10e6, s, e, rec) for s, e, rec in wins]
    out = {}
    for phase in ("launch", "graph", "sync"):
        bs = [b for b in batches if b[0] == phase]
        if not bs:
            continue
        p0, p1 = bs[0][1], bs[-1][2]
        per_item_rec = nodes if phase == "graph" else 1

        def touching(b):
            return [i for i, r in enumerate(reach) if b[1] < r[1] and b[2] > r[0]]

        clear = [(b[2] - b[1]) / b[3] for b in bs if not touching(b)]
        if len(clear) < 10:
            out[phase] = {"batches": len(bs), "clear": len(clear)}
            continue
        base = st.median(clear)
        inside = [(b[2] - b[1]) / b[3] for b in bs if any(r[2] <= b[1] and b[2] <= r[3] for r in reach)]
        per_win = {}
        for b in bs:
            t = touching(b)
            if t:
                i = t[0]
                per_win[i] = per_win.get(i, 0.0) + (b[2] - b[1]) - base * b[3]
        # only windows whose reach lies inside the phase
        full = [i for i in per_win if reach[i][0] >= p0 and reach[i][1] <= p1]
        pts = [(reach[i][4], per_win[i]) for i in full]
        est = [att + det + reach[i][4] * RECORD_COST_NS for i in full]
        out[phase] = {
            "batches": len(bs),
            "clear": len(clear),
            "base_ns": base,
            "in_window_ns": (st.median(inside) - base) if inside else None,
            "in_window_per_record_ns": ((st.median(inside) - base) / per_item_rec) if inside else None,
            "windows": len(full),
            "excess_ms": [p[1] / 1e6 for p in pts],
            "records": [p[0] for p in pts],
            "estimate_ms": [e / 1e6 for e in est],
            "attach_ms": att / 1e6,
            "detach_ms": det / 1e6,
            "fit": fit(pts),
            "phase_s": (p1 - p0) / 1e9,
        }
    return out, g


def fmt(v, f="{:.0f}"):
    return "" if v is None else f.format(v)


def main():
    root = sys.argv[1]
    runs = sorted(os.listdir(root))
    rows = {}
    for r in runs:
        d = os.path.join(root, r)
        if not os.path.exists(os.path.join(d, "batches.txt")):
            continue
        mode = r.rsplit(".r", 1)[0]
        try:
            res, g = analyse(d)
        except (OSError, ValueError) as e:
            print(f"<!-- {r}: {e} -->")
            continue
        rows[r] = (mode, res, g)
    print("# What a CUPTI window costs the program (window_cost.cu, timed inside the process)\n")
    print("Per run and phase: the clear batches' median per item (baseline), the in-window median less it,")
    print("per window the program's excess time (attach and detach included) against the budget's estimate")
    print("(attach + detach as timed, 5,000 ns per record). Medians over the phase's windows.\n")
    print("| run | phase | batches (clear) | baseline ns/item | in window +ns/item | +ns/record | windows | records/window | excess ms/window | estimate ms/window | excess / estimate | fit: fixed ms + ns/record | attach, detach ms/window |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    agg = {}
    for r, (mode, res, g) in rows.items():
        for phase, x in res.items():
            if "base_ns" not in x:
                print(f"| {r} | {phase} | {x['batches']} ({x['clear']}) | too few clear batches | | | | | | | | | |")
                continue
            ex, es, rec = x["excess_ms"], x["estimate_ms"], x["records"]
            ratio = (sum(ex) / sum(es)) if es and sum(es) > 0 else None
            f = x["fit"]
            print(
                f"| {r} | {phase} | {x['batches']} ({x['clear']}) | {fmt(x['base_ns'])} | {fmt(x['in_window_ns'])} | "
                f"{fmt(x['in_window_per_record_ns'])} | {x['windows']} | {fmt(st.median(rec) if rec else None)} | "
                f"{fmt(st.median(ex) if ex else None, '{:.2f}')} | {fmt(st.median(es) if es else None, '{:.2f}')} | "
                f"{fmt(ratio, '{:.2f}')} | {'' if not f else f'{f[0] / 1e6:.2f} + {f[1]:.0f}'} | "
                f"{x['attach_ms']:.1f}, {x['detach_ms']:.1f} |"
            )
            a = agg.setdefault((mode, phase), {"base": [], "inw": [], "rec": [], "ex": 0.0, "es": 0.0, "n": 0})
            a["base"].append(x["base_ns"])
            if x["in_window_per_record_ns"] is not None:
                a["rec"].append(x["in_window_per_record_ns"])
            a["ex"] += sum(ex)
            a["es"] += sum(es)
            a["n"] += len(ex)
    print("\n## By mode and phase (medians over runs; excess and estimate summed over every window)\n")
    print("| mode | phase | runs | baseline ns/item | in window +ns/record | windows | excess ms in all | estimate ms in all | excess / estimate |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (mode, phase), a in sorted(agg.items()):
        ratio = a["ex"] / a["es"] if a["es"] > 0 else None
        print(
            f"| {mode} | {phase} | {len(a['base'])} | {st.median(a['base']):.0f} | "
            f"{fmt(st.median(a['rec']) if a['rec'] else None)} | {a['n']} | {a['ex']:.1f} | {a['es']:.1f} | {fmt(ratio, '{:.2f}')} |"
        )


if __name__ == "__main__":
    main()
