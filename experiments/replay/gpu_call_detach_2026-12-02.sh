#!/usr/bin/env bash
# The second device call of 2026-12-02's second session: where CUPTI may detach
# (experiments/gpu-default/gpu_detach_check.sh), then GPT-2 generation's cost per mode with the
# stack walks timed and the Python codes checked in one read per stack (gpu_recorder_cost.sh).
#   OUT=$OUT bash experiments/replay/gpu_call_detach_2026-12-02.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/detach" "$OUT/gen"
OUT=$OUT/detach RUNS=${DETACH_RUNS:-6} bash "$here/../gpu-default/gpu_detach_check.sh" | tail -30
OUT=$OUT/gen KIND=gen ARGS="--tokens 96" CALLS=1 REPS=2 ROUNDS=${GEN_ROUNDS:-3} REPLAY=0 BUDGET_S=${GEN_S:-250} MODES="untraced|-
default|
replayable|--replayable
nogpu|--no-gpu" bash "$here/gpu_recorder_cost.sh" | tail -24
