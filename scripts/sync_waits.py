#!/usr/bin/env python3
"""Where a served workload waits, alone and together (docs/colocation.md,
call 10's follow-up): reads a trace of `colocation_real.py` run under
`tracer record` (each served run is a phase `served KIND K` of its process,
colocation_workloads.py marks them) and prints, per workload and kind of run
(alone: no other workload's phase overlaps; together: one does), the
runs' mean wall time, synchronizing calls per run and the time they took,
and the distribution of one synchronization's time.

    python3 sync_waits.py TRACE.jsonl[.zst]
"""
import argparse
import io
import json
import statistics
import subprocess
import sys

WAITS = ("Synchronize", "DtoH_v2", "DtoH(")


def lines(path):
    if path.endswith(".zst"):
        p = subprocess.Popen(["zstd", "-dc", path], stdout=subprocess.PIPE)
        yield from io.TextIOWrapper(p.stdout)
    else:
        yield from open(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    a = ap.parse_args()
    phases = {}  # pid -> [(start, end)]
    open_at = {}
    calls = {}  # pid -> [(ts, dur_ns, name)]
    cmd = {}
    for l in lines(a.trace):
        try:
            d = json.loads(l)
        except ValueError:
            continue
        pid = d.get("pid")
        if d.get("type") == "marker" and d.get("op") == "phase":
            label = d.get("label", "")
            if label.startswith("served "):
                open_at[pid] = d["ts"]
                cmd[pid] = label.split()[1]
            elif label == "between" and pid in open_at:
                phases.setdefault(pid, []).append((open_at.pop(pid), d["ts"]))
            continue
        n = d.get("name", "")
        if d.get("type") != "gpu" and "duration_us" in d and any(w in n for w in WAITS):
            calls.setdefault(pid, []).append((d["ts"], int(d["duration_us"] * 1000), n))
    print("  pid workload                     kind     runs  wall ms (mean)  syncs/run  sync ms/run  one sync: median p90 max (µs)")
    for pid, ph in sorted(phases.items()):
        others = [iv for p, v in phases.items() if p != pid for iv in v]
        for kind in ("alone", "together"):
            sel = [(s, e) for s, e in ph if any(o[0] < e and s < o[1] for o in others) == (kind == "together")]
            if not sel:
                continue
            waits = [(ts, dur) for ts, dur, _ in calls.get(pid, []) if any(s <= ts < e for s, e in sel)]
            one = sorted(dur / 1e3 for _, dur in waits)
            q = lambda x: one[min(len(one) - 1, int(x * len(one)))] if one else float("nan")  # noqa: E731
            print(f"{pid:5d} {cmd.get(pid, '')[:28]:28s} {kind:8s} {len(sel):3d} "
                  f"{statistics.fmean((e - s) / 1e6 for s, e in sel):10.1f} {len(waits) / len(sel):8.1f} "
                  f"{sum(d for _, d in waits) / 1e6 / len(sel):10.1f}   {q(.5):8.1f} {q(.9):8.1f} {one[-1] if one else float('nan'):8.1f}")


if __name__ == "__main__":
    sys.exit(main())
