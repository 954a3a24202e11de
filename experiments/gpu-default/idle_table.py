#!/usr/bin/env python3
"""The table of gpu_default.sh's idle.csv (ANALYZE_EACH=1): per program and
mode, the median over its runs of the idle share and busy time of the whole
GPU window and of the steady phase, with their range; and the difference of
the default's medians to the full runs' (points; % of busy).

    python3 idle_table.py idle.csv
"""
import csv
import statistics
import sys
from collections import defaultdict


def main(path):
    by = defaultdict(lambda: defaultdict(list))  # prog -> mode -> rows
    for r in csv.DictReader(open(path)):
        by[r["prog"]][r["mode"]].append(r)
    fields = (("whole_idle_pct", "idle (whole) %"), ("whole_busy_ms", "busy (whole) ms"),
              ("steady_idle_pct", "idle (steady) %"), ("steady_busy_ms", "busy (steady) ms"),
              ("steady_s", "steady s"))
    print("| program | mode | runs | " + " | ".join(t for _, t in fields) + " |")
    print("|---|---|---|" + "---|" * len(fields))
    meds = defaultdict(dict)
    for p, modes in by.items():
        for m, rows in modes.items():
            cells = []
            for f, _ in fields:
                v = [float(r[f]) for r in rows if r.get(f)]
                if not v:
                    cells.append("–")
                    continue
                meds[(p, m)][f] = statistics.median(v)
                cells.append(f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})")
            print(f"| {p} | {m} | {len(rows)} | " + " | ".join(cells) + " |")
    print("\nmedians, mode − full: idle in points, busy in % of full. \"at its own length\": the "
          "mode's idle share against full CUPTI's busy time over the mode's own span "
          "(busy / (1 − idle)), i.e. the busy time's error in points of that process's phase, "
          "apart from how long each process took\n")
    print("| program | mode | Δ idle whole | at its own length | Δ busy whole | Δ idle steady | "
          "at its own length | Δ busy steady |")
    print("|---|---|---|---|---|---|---|---|")
    for p in by:
        f = meds.get((p, "full"), {})
        for m in ("default", "default_h"):
            d = meds.get((p, m), {})
            if not d or not f:
                continue

            def diff(k, pct=False):
                if k not in d or k not in f:
                    return "–"
                return f"{100 * (d[k] / f[k] - 1):+.1f} %" if pct else f"{d[k] - f[k]:+.2f}"

            def own(idle, busy):
                if idle not in d or busy not in d or busy not in f or d[idle] >= 100:
                    return "–"
                span = d[busy] / (1 - d[idle] / 100)
                return f"{100 * (f[busy] - d[busy]) / span:+.2f}"
            print(f"| {p} | {m} | {diff('whole_idle_pct')} | {own('whole_idle_pct', 'whole_busy_ms')} | "
                  f"{diff('whole_busy_ms', True)} | {diff('steady_idle_pct')} | "
                  f"{own('steady_idle_pct', 'steady_busy_ms')} | {diff('steady_busy_ms', True)} |")

if __name__ == "__main__":
    main(sys.argv[1])
