#!/usr/bin/env bash
# The latency-sensitive MLP (600 steps, 5 reps a process) under the recording modes, with the
# build before the energy counter was paced (.device-bin/old.tar.xz: its tracer, run with
# --no-gpu) beside the new one, and the new one without NVML (--no-power): what the power
# sampler's energy queries cost the program and the collector (gpu_recorder_cost.sh).
#   OUT=$OUT bash experiments/replay/gpu_call_power_2026-12-02.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p .device-bin/old && tar -C .device-bin/old -xJf .device-bin/old.tar.xz
OUT=$OUT KIND=mlp ARGS="--steps 600" CALLS=9 REPS=5 ROUNDS=${ROUNDS:-12} REPLAY=0 BUDGET_S=${MLP_S:-450} \
    MODES="untraced|-
nogpu-old|@.device-bin/old/tracer --no-gpu
nogpu|--no-gpu
nogpu-nopower|--no-gpu --no-power
default|
replayable|--replayable" bash "$here/gpu_recorder_cost.sh" | tail -40
