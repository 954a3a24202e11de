#!/usr/bin/env python3
"""`python3 scripts/compare_gaps.py TRACER TRACE...`: idle share and gap p50/p90 of GPU 0 (whole window and per phase) from `tracer gaps --json` of each trace, one row each (docs/idle-accuracy.md)."""
import json, subprocess, sys
tr = sys.argv[1]
def g(path):
    return json.loads(subprocess.run([tr, "gaps", path, "--json"], capture_output=True, text=True, check=True).stdout)
full = g(sys.argv[2])
print(f"{'trace':<28} {'timeline':<9} {'scope/phase':<14} {'window':>10} {'idle %':>7} {'p50 us':>8} {'p90 us':>8} {'gaps':>6}")
for path in sys.argv[2:]:
    r = g(path)
    sc = r["scopes"][0]
    rows = [("all", sc["overall"])] + [(p["phase"], p["stats"]) for p in sc["phases"]]
    for name, s in rows:
        sh = s["idle_share"] if s["idle_share"] is not None else float("nan")
        print(f"{path.split('/')[-1][:28]:<28} {r['timeline']:<9} {name:<14} {s['window_ns']/1e6:>8.1f}ms {100*sh:>7.2f} {s['p50_ns']/1e3:>8.1f} {s['p90_ns']/1e3:>8.1f} {s['count']:>6}")
    cov = r["diagnostics"].get("coverage")
    if cov: print("   coverage:", cov["missing_launches"], "of", cov["kernel_launches"], "launches missing,", cov["missing_ns"], "of", cov["kernel_ns"], "ns")
