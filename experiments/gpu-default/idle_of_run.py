#!/usr/bin/env python3
"""One line of idle.csv for gpu_default.sh's ANALYZE_EACH=1: the idle share
and busy time of a run's whole GPU window and of its steady phase, from
`tracer gaps --json` (its GPU scope), with the window check's figures.

    python3 idle_of_run.py GAPS_JSON PROG ROUND MODE STEADY_S
prints: prog,round,mode,steady_s,whole_idle_pct,whole_busy_ms,steady_idle_pct,steady_busy_ms,window_check_points,window_check_windows
"""
import json
import sys


def main():
    path, prog, rnd, mode, steady_s = sys.argv[1:6]
    try:
        g = json.load(open(path))
    except (OSError, ValueError):
        g = {}
    scopes = g.get("scopes") or []
    s = next((x for x in scopes if x.get("kind") == "gpu"), scopes[0] if scopes else {})

    def fig(stats):
        stats = stats or {}
        idle = stats.get("idle_share")
        if idle is None:
            idle = stats.get("idle_share_lower_bound")
        busy = stats.get("busy_ns")
        return ("" if idle is None else f"{100 * idle:.3f}" if idle <= 1 else f"{idle:.3f}",
                "" if busy is None else f"{busy / 1e6:.3f}")

    whole = fig(s.get("overall"))
    steady = next((p.get("stats") for p in s.get("phases") or [] if p.get("phase") == "steady"), None)
    st = fig(steady)

    def find(x):
        if isinstance(x, dict):
            if "window_check" in x:
                return x["window_check"]
            for y in x.values():
                r = find(y)
                if r is not None:
                    return r
        elif isinstance(x, list):
            for y in x:
                r = find(y)
                if r is not None:
                    return r
        return None

    wc = find(g) or {}
    pts = wc.get("points")
    print(",".join([prog, rnd, mode, steady_s, whole[0], whole[1], st[0], st[1],
                    "" if pts is None else f"{pts:.3f}", str(wc.get("windows", ""))]))


if __name__ == "__main__":
    main()
