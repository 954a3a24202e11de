#!/usr/bin/env python3
"""The co-location table (experiments/colocation/gpu_colocation.sh, docs/colocation.md): per
pair and tenant, the real-together slowdown with its alone-vs-alone spread
(colocation_real.py's JSON), the replayed-together one with its spread
(`replay --together`'s report), the predicted one (the same report), and
their errors against the real one.

    python3 colocation_table.py --pair gen+batch real_gen+batch.json together_gen+batch.json [--pair ...]

Slowdown: median together time over median alone time; spread: (max − min)
of the alone times over their median, as replay computes them
(replay/src/together/measure.rs). The real slowdown's 90 % interval is a
bootstrap: the alone and the together runs resampled with replacement, each
on its own, 2,000 times (a fixed seed: the same runs give the same
interval); "in" says whether the replayed slowdown lies inside it, i.e.
whether the real runs could have measured it.
"""
import argparse
import json
import random
import sys


def median(v):
    s = sorted(v)
    n = len(s)
    if n == 0:
        return float("nan")
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def spread_pct(v):
    return 100.0 * (max(v) - min(v)) / median(v) if v else float("nan")


def interval(alone, tog, n=2000, seed=1):
    """The 5th and 95th percentiles of median(tog) / median(alone) over n bootstrap resamples."""
    rng = random.Random(seed)
    v = sorted(median(rng.choices(tog, k=len(tog))) / median(rng.choices(alone, k=len(alone))) for _ in range(n))
    return v[int(0.05 * (n - 1))], v[int(0.95 * (n - 1))]


def run_times(real, t, run):
    """Tenant `t`'s seconds over colocation_real.py's runs named `run` ("alone T", "together")."""
    return [r["seconds"][t] for r in real["runs"] if r["run"] == run and t in r["seconds"]]


def slowdowns(real):
    """{tenant: (slowdown, alone spread %, together spread %, n alone, n together, (lo, hi))} from colocation_real.py's JSON."""
    out = {}
    for t in real["tenants"]:
        alone = run_times(real, t, f"alone {t}")
        tog = run_times(real, t, "together")
        if alone and tog:
            out[t] = (median(tog) / median(alone), spread_pct(alone), spread_pct(tog), len(alone), len(tog),
                      interval(alone, tog))
    return out


def replayed(report):
    """[(tenant name, slowdown, alone spread %, predicted)] from `replay --together`'s report."""
    rows = []
    for t in report["tenants"]:
        name = t["recording"].rstrip("/").split("/")[-1]
        name = name[: -len(".rec")] if name.endswith(".rec") else name
        m, p = t["measured"], t["predicted"]
        rows.append((name, m["slowdown"], m["alone_spread_pct"], p.get("slowdown")))
    return rows


def err(x, ref):
    if x is None or ref is None or ref != ref or x != x:
        return "-"
    return f"{100.0 * (x - ref) / ref:+.1f}%"


def fmt(x, spread=None):
    if x is None or x != x:
        return "-"
    return f"{x:.3f}x" + (f" ({spread:.1f}%)" if spread is not None and spread == spread else "")


def table(pairs):
    """pairs: [(pair name, real JSON or None, replay report or None)] -> the table's text."""
    head = ("pair", "tenant", "real (alone spread)", "real 90% interval", "replayed (alone spread)", "in",
            "predicted", "replay err", "pred. err")
    rows = [head]
    for pair, real, rep in pairs:
        r = slowdowns(real) if real else {}
        names = list(real["tenants"]) if real else []
        rp = {n: (s, sp, pr) for n, s, sp, pr in replayed(rep)} if rep else {}
        for n in rp:
            if n not in names:
                names.append(n)
        if not names:
            rows.append((pair, "-", "no results", "", "", "", "", "", ""))
        for n in names:
            real_s = r.get(n)
            rep_s = rp.get(n)
            rows.append((
                pair,
                n,
                fmt(real_s[0], real_s[1]) if real_s else "-",
                f"{real_s[5][0]:.3f}-{real_s[5][1]:.3f}x" if real_s else "-",
                fmt(rep_s[0], rep_s[1]) if rep_s else "-",
                ("yes" if real_s[5][0] <= rep_s[0] <= real_s[5][1] else "no") if real_s and rep_s else "-",
                fmt(rep_s[2]) if rep_s else "-",
                err(rep_s[0] if rep_s else None, real_s[0] if real_s else None),
                err(rep_s[2] if rep_s else None, real_s[0] if real_s else None),
            ))
    w = [max(len(str(row[i])) for row in rows) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w[i]) for i, c in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * x for x in w))
    lines.append("(spread): the alone-vs-alone spread, (max − min) of the alone runs over their median; err: against the real slowdown")
    lines.append("90% interval: the real slowdown's bootstrap interval (alone and together runs resampled, 2,000 times);"
                 " in: the replayed slowdown lies inside it")
    return "\n".join(lines) + "\n"


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"colocation_table: {path}: {e}", file=sys.stderr)
        return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pair", action="append", nargs=3, metavar=("NAME", "REAL_JSON", "REPLAY_REPORT"), default=[],
                    help="one pair: its name, colocation_real.py's JSON, replay --together's report")
    a = ap.parse_args(argv)
    sys.stdout.write(table([(n, load(r), load(p)) for n, r, p in a.pair]))


if __name__ == "__main__":
    main()
