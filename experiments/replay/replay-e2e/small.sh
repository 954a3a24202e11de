#!/bin/bash
# The small replayable recording committed as traces/replay_check.rec:
# replay_check on 2^16 elements, recorded with every replayable option,
# replayed in every mode on the same machine (outputs compared).
#   BIN=.device-bin OUT=$OUT bash experiments/replay/replay-e2e/small.sh
set -uo pipefail
BIN=${BIN:-.device-bin}
OUT=${OUT:-/tmp/replay-small}
mkdir -p "$OUT"
work=$(mktemp -d)
nvcc -O2 -arch=sm_90 -o "$work/replay_check" examples/replay_check/replay_check.cu || exit 1
mkdir -p "$work/hand"
"$BIN/tracer" -q --force --replayable --capture-data --gpu-timestamps \
    --cupti-injection "$BIN/libtracer_cupti.so" -o "$work/replay_check.rec" -- "$work/replay_check" "$work/hand" 1 16
echo "record exit: $?"
"$BIN/tracer" summary "$work/replay_check.rec" | tail -4
"$BIN/replay" "$work/replay_check.rec" --mode sequence,isolated,graph,timed --iterations 3 --warmup 1 \
    --report "$OUT/replay_check_small.report.json" 2>&1 | tail -25
echo "replay exit: $?"
rm -f "$work/replay_check.rec/replay-report.json"
tar czf "$OUT/replay_check.rec.tar.gz" -C "$work" replay_check.rec
du -sh "$work/replay_check.rec" "$OUT/replay_check.rec.tar.gz"
