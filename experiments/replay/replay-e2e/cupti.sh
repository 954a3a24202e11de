#!/bin/bash
# The replay timed with CUPTI, like the recording's `gpu` lines (issue 7):
# each program recorded with every replayable option, then replayed in every
# mode with energy. Results (reports, durations, replayed timelines, the
# recordings' gpu/marker lines for `tracer plot --compare`) in $OUT/cupti.tgz.
#   BIN=.device-bin OUT=$OUT bash experiments/replay/replay-e2e/cupti.sh [check2000] [simple] [gpt2]
set -uo pipefail
BIN=${BIN:-.device-bin}
OUT=${OUT:-/tmp/replay-cupti}
T="$BIN/tracer"
R="$BIN/replay"
mkdir -p "$OUT/cupti"
work=$(mktemp -d)
which=${*:-check2000 simple gpt2}
rec() { # NAME TIMEOUT CMD...
    local name=$1 limit=$2; shift 2
    timeout "$limit" "$T" -q --force --replayable --capture-data --gpu-timestamps \
        --cupti-injection "$BIN/libtracer_cupti.so" -o "$work/$name.rec" -- "$@" > "$work/$name.record.log" 2>&1
    echo "== record $name: exit $? ($(du -sh "$work/$name.rec" | cut -f1))"
    "$T" summary "$work/$name.rec" 2>&1 | grep -E "replayable|gpu \(CUPTI"
    grep -E '"type":"(header|gpu|marker|footer)"' "$work/$name.rec/trace.jsonl" | gzip > "$OUT/cupti/${name}_recorded_gpu.jsonl.gz"
}
play() { # NAME TIMEOUT ARGS...
    local name=$1 limit=$2; shift 2
    timeout "$limit" "$R" "$work/$name.rec" "$@" --report "$OUT/cupti/$name.json" > "$work/$name.replay.log" 2>&1
    echo "== replay $name: exit $?"
    # Progress lines end in \r: split them, drop them, keep everything else.
    tr '\r' '\n' < "$work/$name.replay.log" | grep -v "^$\|: iteration [0-9]*/\|^isolated: [0-9]*/\|energy: \|Assertion" | head -120
    echo "device assertion lines: $(grep -c Assertion "$work/$name.replay.log")"
    # Recorded vs replayed timelines (sequence, timed), drawn from the whole recording.
    for m in "" -timed; do
        f="$OUT/cupti/$name.timeline$m.jsonl"
        [ -f "$f" ] && "$T" plot "$work/$name.rec" --compare "$f" -o "$OUT/cupti/plots_$name$m" > "$OUT/cupti/plots_$name$m.txt" 2>&1
    done
    for f in "$OUT/cupti/$name".timeline*.jsonl; do [ -f "$f" ] && gzip -f "$f"; done
    cp "$work/$name.replay.log" "$OUT/cupti/$name.replay.log"
}
for w in $which; do
    case $w in
    check2000)
        nvcc -O2 -arch=sm_90 -o "$work/replay_check" examples/replay_check/replay_check.cu || exit 1
        mkdir -p "$work/hand"
        rec check2000 120 "$work/replay_check" "$work/hand" 2000 24
        play check2000 240 --mode sequence,timed,graph,isolated --iterations 3 --warmup 1 --energy-seconds 3 ;;
    check6000) # long enough (~3 s of GPU work) for the recording's own energy
        nvcc -O2 -arch=sm_90 -o "$work/replay_check" examples/replay_check/replay_check.cu || exit 1
        mkdir -p "$work/hand6"
        rec check6000 120 "$work/replay_check" "$work/hand6" 6000 24
        play check6000 300 --mode sequence,timed,isolated --iterations 3 --warmup 1 --energy-seconds 3 ;;
    simple)
        rec simple 200 python3 examples/simple_inference.py
        play simple 150 --mode sequence,timed,graph,isolated --iterations 3 --warmup 1 ;;
    gpt2)
        rec gpt2 300 python3 examples/transformer_inference.py --iterations 3
        play gpt2 400 --mode sequence,timed,graph,isolated --iterations 3 --warmup 1 --energy-seconds 3 ;;
    gpt2-copies) # copies from pageable memory, back to back vs paced: timed first, then sequence; then page-locked
        [ -d "$work/gpt2.rec" ] || rec gpt2 300 python3 examples/transformer_inference.py --iterations 3
        ln -sfn "$work/gpt2.rec" "$work/gpt2b.rec"
        play gpt2b 200 --mode timed,sequence --iterations 2 --warmup 1
        ln -sfn "$work/gpt2.rec" "$work/gpt2c.rec"
        play gpt2c 200 --mode sequence,timed --iterations 2 --warmup 1 --pinned-copies ;;
    esac
done
tar czf "$OUT/cupti-$(echo $which | tr ' ' '-').tgz" -C "$OUT" cupti && rm -rf "$OUT/cupti"
