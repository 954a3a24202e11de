#!/usr/bin/env bash
# The third device call of 2026-12-02's second session: the latency-sensitive loop's
# --replayable recordings, each replayed alone, against interleaved untraced processes
# (gpu_recorder_cost.sh, REPLAY=all, issue 44's first target), then GPT-2 generation
# recorded by default and with --no-gpu, for the collector's cost after the maps and
# code-object reads were cut (footer `collector`, `lost`).
#   OUT=$OUT bash experiments/replay/gpu_call_replays_2026-12-02.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/mlp" "$OUT/gen"
OUT=$OUT/mlp ROUNDS=${MLP_ROUNDS:-8} REPS=3 REPLAY=all BUDGET_S=${MLP_S:-150} MODES="untraced|-
replayable|--replayable" bash "$here/gpu_recorder_cost.sh" | tail -24
OUT=$OUT/gen KIND=gen ARGS="--tokens 96" CALLS=1 REPS=2 ROUNDS=1 REPLAY=0 BUDGET_S=${GEN_S:-100} MODES="default|
nogpu|--no-gpu" bash "$here/gpu_recorder_cost.sh" | tail -12
python3 - "$OUT/gen/results.tgz" <<'PY'
import io, json, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    for m in t.getmembers():
        if m.name.endswith(".footer.json"):
            f = json.load(t.extractfile(m))
            print(m.name, "duration", f.get("duration_s"), "collector", f.get("collector"), "lost", f.get("lost", {}).get("total"),
                  "resolver", (f.get("stacks") or {}).get("resolver_errors"))
PY
