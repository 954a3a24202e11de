#!/usr/bin/env python3
"""The `--host-scale` factors that give each replayed tenant the host speed of
the real runs (scripts/gpu_colocation.sh HOST_MATCH=KIND, docs/colocation.md,
*Host speed*): per tenant, the median of its real alone runs
(colocation_real.py's JSON) over its recorded phase's paced span without the
recorder's stops (`replay plan A B --together --json`: `paced_span_ns` −
`stopped_ns`). Only the alone runs are read, never the together ones: the
interference stays the replay's measurement.

    python3 host_match.py REAL_JSON PLAN_JSON    # prints F1,F2 (3 decimals)

A tenant whose phase is mostly GPU time gets a factor near 1 only when its
real alone time is near the recorded one; read the factors before using them.
"""
import json
import sys


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def factors(real, plan):
    out = []
    for name, t in zip(real["tenants"], plan["tenants"]):
        alone = [r["seconds"][name] for r in real["runs"] if r["run"] == f"alone {name}" and name in r["seconds"]]
        paced = (t["paced_span_ns"] - t["stopped_ns"]) / 1e9
        if not alone or paced <= 0:
            raise ValueError(f"tenant {name}: {len(alone)} alone runs, paced span {paced:.6f} s: no factor")
        out.append(median(alone) / paced)
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: host_match.py REAL_JSON PLAN_JSON", file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            real = json.load(f)
        with open(argv[2]) as f:
            plan = json.load(f)
        print(",".join(f"{x:.3f}" for x in factors(real, plan)))
    except (OSError, ValueError, KeyError) as e:
        print(f"host_match: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
