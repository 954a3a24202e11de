#!/bin/bash
# End to end on the GPU machine: programs recorded by the real recorder
# (`tracer record --replayable --capture-data --gpu-timestamps`), then
# re-executed by `replay`, outputs compared with the recorded device-to-host
# bytes. BIN: folder with tracer, libtracer_cupti.so and replay; OUT: results.
#   BIN=.device-bin OUT=$OUT bash experiments/replay/replay-e2e/run.sh
set -uo pipefail
# Replay logs: progress lines end in \r; split them before filtering, or a device
# assertion message glued to a progress line hides it (it hid that GPT-2's
# assertion came from isolated mode, not from a sequence pass).
BIN=${BIN:-.device-bin}
OUT=${OUT:-/tmp/replay-e2e}
T="$BIN/tracer"
R="$BIN/replay"
mkdir -p "$OUT"
work=$(mktemp -d)
nvcc -O2 -arch=sm_90 -o "$work/replay_check" examples/replay_check/replay_check.cu || exit 1
rec() { # NAME TIMEOUT CMD...: record with every replayable option; prints the coverage
    local name=$1 limit=$2; shift 2
    timeout "$limit" "$T" -q --force --replayable --capture-data --gpu-timestamps \
        --cupti-injection "$BIN/libtracer_cupti.so" -o "$work/$name.rec" -- "$@"
    local rc=$?
    echo "record $name: exit $rc"
    if [ $rc -eq 124 ]; then
        # Still running: where is it?
        for p in $(pgrep -f "$1"); do grep -H State /proc/$p/status; done
        tail -c 2000 "$work/$name.rec/trace.jsonl"
        pkill -CONT -f python3; pkill -9 -f "$T"
    fi
    "$T" summary "$work/$name.rec" 2>&1 | grep -E "replayable|records:|launches"
    du -sh "$work/$name.rec" "$work/$name.rec/images" "$work/$name.rec/data"
}
# 1. replay_check once (2^20 elements): coverage and outputs bit for bit.
mkdir -p "$work/hand1" "$work/hand2"  # where replay_check writes its own (hand-made) recording
rec replay_check 120 "$work/replay_check" "$work/hand1" 1 20
"$R" "$work/replay_check.rec" --mode sequence,isolated,graph --iterations 3 --warmup 1 \
    --report "$OUT/replay_check.json" 2>&1 | tail -40
echo "replay exit: $?"
# 2. PyTorch: simple_inference, then GPT-2 generation (3 iterations).
rec simple 200 python3 examples/simple_inference.py
timeout 150 "$R" "$work/simple.rec" --mode sequence,isolated --iterations 3 --warmup 1 \
    --report "$OUT/simple.json" > "$work/simple.replay.log" 2>&1
echo "replay exit: $?"
echo "device assertion lines: $(grep -c Assertion "$work/simple.replay.log")"
tr '\r' '\n' < "$work/simple.replay.log" | grep -v Assertion | tail -30
rec gpt2 300 python3 examples/transformer_inference.py --iterations 3
timeout 240 "$R" "$work/gpt2.rec" --mode sequence,isolated --iterations 3 --warmup 1 --energy-seconds 3 \
    --report "$OUT/gpt2.json" > "$work/gpt2.replay.log" 2>&1
echo "replay exit: $?"
echo "device assertion lines: $(grep -c Assertion "$work/gpt2.replay.log")"
tr '\r' '\n' < "$work/gpt2.replay.log" | grep -v Assertion | tail -45
# The op that failed, if any: its trace line.
for n in $(grep -o "trace.jsonl line [0-9]*" "$work/gpt2.replay.log" | awk '{print $3}' | head -2); do
    sed -n "${n}p" "$work/gpt2.rec/trace.jsonl" | cut -c1-3000
done
gzip -c "$work/gpt2.rec/manifest.json" > "$OUT/gpt2.manifest.json.gz"
