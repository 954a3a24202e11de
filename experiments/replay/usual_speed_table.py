#!/usr/bin/env python3
"""The usual-speed check (issue 44; gpu_call_usual_speed_2026-12-03.sh): every
--replayable recording of gpu_recorder_cost.sh (ROUNDS rounds, REPLAY=all,
RECORDED_SPEED_TOO=1, the workload with --gauge) replayed alone with the default pacing
(compensated, scaled to the machine's usual speed) and with --recorded-speed, against the
untraced processes' first reps; then the pure-Python gauge of both kinds of process.

    python3 usual_speed_table.py WORK_DIR
"""
import glob
import json
import math
import os
import statistics as st
import sys


def alone_ms(path):
    try:
        g = json.load(open(path))["gpu"]
    except (OSError, ValueError, KeyError):
        return None
    v = [x["window_ms"] for x in g if x["run"].startswith("alone")]
    return st.median(v) if v else None


def corr(a, b):
    ma, mb = st.mean(a), st.mean(b)
    num = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    den = math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))
    return num / den if den else float("nan")


def main():
    work = sys.argv[1]
    runs = [json.loads(l) for l in open(os.path.join(work, "runs.jsonl"))]
    ok = [r for r in runs if r["result"]]
    unt = {r["round"]: r["result"] for r in ok if r["mode"] == "untraced"}
    rec = {r["round"]: r["result"] for r in ok if r["mode"] == "replayable"}
    um = st.median(x["seconds"][0] * 1e3 for x in unt.values())
    print(f"untraced first reps: median {um:.2f} ms over {len(unt)} processes "
          f"({min(x['seconds'][0] for x in unt.values())*1e3:.1f}-{max(x['seconds'][0] for x in unt.values())*1e3:.1f})")
    print("| round | gauge ns | history | factor | recorded ms | replay, usual speed | vs untraced median | replay, recorded speed | vs untraced median |")
    print("|---|---|---|---|---|---|---|---|---|")
    usual, recorded = [], []
    for r in sorted(rec):
        f = os.path.join(work, f"replayable.{r}.footer.json")
        try:
            h = json.load(open(f)).get("host_speed") or {}
        except (OSError, ValueError):
            h = {}
        a = alone_ms(os.path.join(work, f"replay_replayable.{r}.json"))
        b = alone_ms(os.path.join(work, f"replay_replayable.{r}.recorded.json"))
        if a:
            usual.append(a)
        if b:
            recorded.append(b)
        pct = lambda x: f"{(x / um - 1) * 100:+.1f} %" if x else "–"
        ms = lambda x: f"{x:.2f}" if x else "–"
        print(f"| {r} | {h.get('gauge_ns') or 0:.0f} | {h.get('recordings')} | {h.get('factor') or 0:.3f} | "
              f"{rec[r]['seconds'][0]*1e3:.2f} | {ms(a)} | {pct(a)} | {ms(b)} | {pct(b)} |")
    for name, v in (("usual speed (default)", usual), ("--recorded-speed", recorded)):
        if v:
            md = st.median(v)
            print(f"{name}: median of {len(v)} replays {md:.2f} ms ({(md/um-1)*100:+.1f} % against the untraced median), "
                  f"spread {(max(v)-min(v))/md*100:.0f} % of the median; within 5 %: {sum(abs(x/um-1) <= 0.05 for x in v)} of {len(v)}")
    # the later half: recordings made with at least 6 earlier ones in the history
    late = [alone_ms(os.path.join(work, f"replay_replayable.{r}.json")) for r in sorted(rec) if r > 6]
    late = [x for x in late if x]
    if late:
        print(f"usual speed, rounds 7-: median {st.median(late):.2f} ms ({(st.median(late)/um-1)*100:+.1f} %)")
    # the pure-Python gauge: step against gauge, per kind of process
    print()
    print("pure-Python gauge (µs per 1000 steps, before/after the first rep), step ms:")
    for name, d in (("untraced", unt), ("replayable", rec)):
        pts = [(st.mean(x["gauge_us"][0]), x["seconds"][0] * 1e3) for x in d.values() if x.get("gauge_us")]
        if len(pts) < 3:
            continue
        gs, ts = [p[0] for p in pts], [p[1] for p in pts]
        mg, mt = st.mean(gs), st.mean(ts)
        slope = sum((g - mg) * (t - mt) for g, t in pts) / sum((g - mg) ** 2 for g in gs)
        print(f"  {name}: {len(pts)} processes, gauge median {st.median(gs):.1f} ({min(gs):.1f}-{max(gs):.1f}), "
              f"step median {st.median(ts):.2f}; corr {corr(gs, ts):+.2f}; step = {mt:.2f} + {slope:.3f} x (gauge - {mg:.1f})")
    # traced against untraced at the untraced processes' median gauge
    ug = [(st.mean(x["gauge_us"][0]), x["seconds"][0] * 1e3) for x in unt.values() if x.get("gauge_us")]
    rg = [(st.mean(x["gauge_us"][0]), x["seconds"][0] * 1e3) for x in rec.values() if x.get("gauge_us")]
    if len(ug) >= 3 and len(rg) >= 3:
        g0 = st.median(p[0] for p in ug)

        def at(pts):
            gs = [p[0] for p in pts]
            mg, mt = st.mean(gs), st.mean(p[1] for p in pts)
            slope = sum((g - mg) * (t - mt) for g, t in pts) / sum((g - mg) ** 2 for g in gs)
            return mt + slope * (g0 - mg)

        print(f"  at the untraced median gauge {g0:.1f}: untraced {at(ug):.2f} ms, recorded {at(rg):.2f} ms "
              f"(tracing's cost at equal speed: {at(rg) - at(ug):+.2f} ms)")
        # the probes' gauge against the Python one, in the traced processes
        pg = []
        for r, x in rec.items():
            try:
                h = json.load(open(os.path.join(work, f"replayable.{r}.footer.json"))).get("host_speed") or {}
            except (OSError, ValueError):
                continue
            if h.get("gauge_ns") and x.get("gauge_us"):
                pg.append((h["gauge_ns"], st.mean(x["gauge_us"][0])))
        if len(pg) >= 3:
            print(f"  probes' gauge against the Python gauge (traced processes): corr {corr([p[0] for p in pg], [p[1] for p in pg]):+.2f}")


if __name__ == "__main__":
    main()
