#!/usr/bin/env bash
# The second device call of 2026-12-02 (docs/replay.md, *Where the rest goes*):
# where a host-bound program's speed comes from (gpu_host_placement.sh, one pinned pass),
# the latency-sensitive loop's --replayable recordings replayed alone against untraced
# processes (gpu_recorder_cost.sh, REPLAY=all), and GPT-2 generation's cost per mode.
#   OUT=$OUT bash experiments/replay/gpu_call_2026-12-02.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/mlp" "$OUT/gen"
OUT=$OUT PASSES=1 UNPINNED=4 BUDGET_S=100 bash "$here/gpu_host_placement.sh" | tail -30
OUT=$OUT/mlp ROUNDS=${MLP_ROUNDS:-4} REPLAY=all BUDGET_S=70 MODES="untraced|-
replayable|--replayable" bash "$here/gpu_recorder_cost.sh" | tail -25
OUT=$OUT/gen KIND=gen ARGS="--tokens 96" CALLS=1 ROUNDS=${GEN_ROUNDS:-4} REPLAY=0 BUDGET_S=170 MODES="untraced|-
default|
replayable|--replayable" bash "$here/gpu_recorder_cost.sh" | tail -25
