#!/bin/bash
# Copies replayed from the recorded kind of host memory (pageable where the
# program's was) vs --pinned-copies, on simple_inference and GPT-2.
#   BIN=.device-bin OUT=$OUT bash experiments/replay/replay-e2e/pageable.sh
set -uo pipefail
BIN=${BIN:-.device-bin}
OUT=${OUT:-/tmp/replay-pageable}
mkdir -p "$OUT"
work=$(mktemp -d)
show() { tr '\r' '\n' < "$1" | grep -v "^$\|iteration\|isolated:\|Assertion" | grep -E "coverage|recorded GPU|sequence|predicted|copy |gemm|elementwise|attention|reduction|other |set |output check|error" | head -30; echo "assertion lines: $(grep -c Assertion "$1")"; }
for ex in simple gpt2; do
    cmd="python3 examples/simple_inference.py"
    [ $ex = gpt2 ] && cmd="python3 examples/transformer_inference.py --iterations 3"
    timeout 200 "$BIN/tracer" -q --force --replayable --capture-data --gpu-timestamps \
        --cupti-injection "$BIN/libtracer_cupti.so" -o "$work/$ex.rec" -- $cmd > /dev/null 2>&1
    echo "== $ex recorded: exit $?"
    timeout 150 "$BIN/replay" "$work/$ex.rec" --mode sequence,isolated --iterations 3 --warmup 1 \
        --report "$OUT/$ex.pageable.json" > "$work/$ex.a.log" 2>&1
    echo "-- $ex, recorded host memory kind: exit $?"; show "$work/$ex.a.log"
    timeout 100 "$BIN/replay" "$work/$ex.rec" --mode sequence --iterations 3 --warmup 1 --pinned-copies \
        --report "$OUT/$ex.pinned.json" > "$work/$ex.b.log" 2>&1
    echo "-- $ex, --pinned-copies: exit $?"; show "$work/$ex.b.log"
done
