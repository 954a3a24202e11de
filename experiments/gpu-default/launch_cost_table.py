#!/usr/bin/env python3
"""The table of gpu_launch_cost.sh: per mode, the median over rounds of the
in-process per-launch and per-step figures (each run's own median batch),
their spread over rounds, and the paired difference to the untraced and the
--no-gpu run of the same round (ns per call; the median over rounds and its
range).

    python3 launch_cost_table.py runs.csv
"""
import csv
import statistics
import sys
from collections import defaultdict


def main(path):
    runs = defaultdict(dict)  # mode -> round -> row
    for row in csv.DictReader(open(path)):
        if row["rc"] != "0" or not row["launch_ns"] or row["round"] == "0":
            continue
        runs[row["mode"]][int(row["round"])] = row
    order = ["untraced", "noop_inject", "nogpu", "standing", "default", "replayable", "full"]
    modes = [m for m in order if m in runs] + sorted(m for m in runs if m not in order)
    for field, title in (("launch_ns", "per launch (ns)"), ("sync_step_ns", "per launch + synchronize (ns)")):
        print(f"\n{title}: each run's median batch; over rounds: median (min-max); paired: this mode − the base in the same round")
        print("| mode | rounds | median | min-max | − untraced | range | − nogpu | range |")
        print("|---|---|---|---|---|---|---|---|")
        for m in modes:
            v = {r: float(x[field]) for r, x in runs[m].items() if x[field]}
            if not v:
                continue
            vals = list(v.values())
            cells = [m, str(len(vals)), f"{statistics.median(vals):.0f}", f"{min(vals):.0f}-{max(vals):.0f}"]
            for base in ("untraced", "nogpu"):
                b = {r: float(x[field]) for r, x in runs.get(base, {}).items() if x[field]}
                d = [v[r] - b[r] for r in v if r in b]
                if d and m != base:
                    cells += [f"{statistics.median(d):+.0f}", f"{min(d):+.0f} … {max(d):+.0f}"]
                else:
                    cells += ["", ""]
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
