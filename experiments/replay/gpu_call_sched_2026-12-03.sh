#!/usr/bin/env bash
# One device call (kind nvidia-h200, as root, from the repository root;
# .device-bin/bins.tar.xz): the window demands of JAX's default recordings
# (experiments/gpu-default/gpu_demand_check.sh) and the recorder's scheduling
# policy (collect/own_sched.rs) on the latency-sensitive MLP: interleaved
# rounds of the untraced loop, `--replayable` and `--replayable` with
# TRACER_RECORDER_SCHED=normal (the previous policy), every recording replayed
# alone (gpu_recorder_cost.sh), then each recording's `sched.held_by_recorder`.
#
#   OUT=$OUT bash experiments/replay/gpu_call_sched_2026-12-03.sh
#
# Environment: JAX_RUNS (3), ROUNDS (8), BUDGET_S (170: the MLP rounds').
set -u
ROOT=$(pwd)
OUT=${OUT:-/tmp/call-out}
mkdir -p "$OUT/jax" "$OUT/mlp"
PROG=jax RUNS=${JAX_RUNS:-3} OUT=$OUT/jax bash experiments/gpu-default/gpu_demand_check.sh
. "$ROOT/experiments/replay/device_bins.sh"
printf '#!/bin/sh\nTRACER_RECORDER_SCHED=normal exec %s "$@"\n' "$T" >/tmp/tracer_normal
chmod +x /tmp/tracer_normal
OUT=$OUT/mlp ROUNDS=${ROUNDS:-8} REPS=3 REPLAY=all BUDGET_S=${BUDGET_S:-170} \
    MODES=$'untraced|-\nreplayable|--replayable\nreplayable-normal|@/tmp/tracer_normal --replayable' \
    bash experiments/replay/gpu_recorder_cost.sh
# each recording's runnable time held by the recorder's threads, and its first rep
python3 - /tmp/cost-work <<'PY' | tee "$OUT/mlp/held_by_recorder.txt"
import glob, json, os, sys
w = sys.argv[1]
runs = {(r["mode"], r["round"]): r for r in map(json.loads, open(os.path.join(w, "runs.jsonl")))}
print("| mode | round | first rep ms | held_by_recorder (ms by thread) | collector sched |")
print("|---|---|---|---|---|")
for p in sorted(glob.glob(os.path.join(w, "*.footer.json")), key=lambda p: (p.split("/")[-1].split(".")[0], int(p.split(".")[-3]))):
    name = os.path.basename(p).split(".")
    mode, rnd = name[0], int(name[1])
    try:
        f = json.load(open(p))
    except ValueError:
        continue
    h = (f.get("sched") or {}).get("held_by_recorder") or {}
    r = (runs.get((mode, rnd)) or {}).get("result") or {}
    first = r.get("seconds", [None])[0]
    print(f"| {mode} | {rnd} | {'' if first is None else round(first * 1e3, 1)} | "
          f"{ {k: round(v / 1e6, 2) for k, v in h.items()} } | {(f.get('collector') or {}).get('sched')} |")
PY
