#!/usr/bin/env bash
# One device call (nvidia-h200, from the repo root, .device-bin/bins.tar.xz): the machine's
# usual speed (issue 44, docs/replay.md *The machine's usual speed*). 12 interleaved rounds
# of one untraced process and one --replayable recording of the MLP (600 steps, 3 reps,
# the pure-Python gauge around each rep); the recordings build a fresh host speed history
# round by round; each is replayed alone with the default pacing and with --recorded-speed.
set -u
ROOT=$(pwd)
OUT=${OUT:-/tmp/usual-out}
mkdir -p "$OUT"
OUT=$OUT ROUNDS=${ROUNDS:-12} REPS=3 REPLAY=all RECORDED_SPEED_TOO=1 BUDGET_S=${BUDGET_S:-230} \
    ARGS="--steps 600 --gauge" MODES=$'untraced|-\nreplayable|--replayable' \
    bash "$ROOT/experiments/replay/gpu_recorder_cost.sh" > "$OUT/cost_stdout.txt" 2>&1
tail -5 "$OUT/cost_stdout.txt"
python3 "$ROOT/experiments/replay/usual_speed_table.py" /tmp/cost-work | tee "$OUT/usual_speed_table.txt"
