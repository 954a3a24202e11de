#!/usr/bin/env bash
# GPT-2 generation, untraced / default / --replayable, one process each per round, interleaved
# (gpu_recorder_cost.sh; issue 44's "--replayable at most 5 points over the default"). One
# device call; run it again for more rounds (the tables pair within a round only).
#   OUT=$OUT bash experiments/replay/gpu_call_gen_paired_2026-12-02.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
command -v perf > /dev/null && echo "perf: $(command -v perf)" || echo "perf: none"
OUT=$OUT KIND=gen ARGS="--tokens ${TOKENS:-32}" CALLS=1 REPS=1 ROUNDS=${ROUNDS:-12} REPLAY=0 BUDGET_S=${GEN_S:-480} \
    MODES="untraced|-
default|
replayable|--replayable" bash "$here/gpu_recorder_cost.sh" | tail -40
