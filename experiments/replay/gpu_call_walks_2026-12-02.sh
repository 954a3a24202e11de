#!/usr/bin/env bash
# The device call of 2026-12-02's second session (docs/replay.md, *What a stack costs*):
# which host-speed probe sees the vCPU placement (gpu_placement_probe.sh), and GPT-2
# generation's cost per mode with the stack walks timed by the kernel side (footer
# `stack_walks`) and launches stamped at the end of their program (gpu_recorder_cost.sh).
#   OUT=$OUT bash experiments/replay/gpu_call_walks_2026-12-02.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/probe" "$OUT/gen" "$OUT/mlp"
OUT=$OUT/probe BUDGET_S=${PROBE_S:-150} bash "$here/gpu_placement_probe.sh" | tail -14
OUT=$OUT/gen KIND=gen ARGS="--tokens 96" CALLS=1 REPS=3 ROUNDS=${GEN_ROUNDS:-4} REPLAY=0 BUDGET_S=${GEN_S:-220} MODES="untraced|-
default|
replayable|--replayable
nogpu|--no-gpu" bash "$here/gpu_recorder_cost.sh" | tail -22
OUT=$OUT/mlp ROUNDS=${MLP_ROUNDS:-2} REPS=3 REPLAY=0 BUDGET_S=${MLP_S:-60} MODES="untraced|-
default|
replayable|--replayable" bash "$here/gpu_recorder_cost.sh" | tail -16
