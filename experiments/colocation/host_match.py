#!/usr/bin/env python3
"""The host speed of real runs, for `replay --together --host-alone-ms`
(experiments/colocation/gpu_colocation.sh HOST_MATCH=KIND, docs/colocation.md, *Host
speed*): per tenant, in the pair's order, the median of its real alone runs
(colocation_real.py's JSON), in milliseconds. Only the alone runs are read,
never the together ones: the interference stays the replay's measurement.

    python3 host_match.py REAL_JSON    # prints MS1,MS2 (3 decimals)
"""
import json
import sys

from colocation_table import median, run_times


def alone_ms(real):
    out = []
    for name in real["tenants"]:
        alone = run_times(real, name, f"alone {name}")
        if not alone:
            raise ValueError(f"tenant {name}: no alone runs")
        out.append(1e3 * median(alone))
    return out


def main(argv):
    if len(argv) != 2:
        print("usage: host_match.py REAL_JSON", file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            real = json.load(f)
        print(",".join(f"{x:.3f}" for x in alone_ms(real)))
    except (OSError, ValueError, KeyError) as e:
        print(f"host_match: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
