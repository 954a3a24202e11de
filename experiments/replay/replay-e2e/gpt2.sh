#!/bin/bash
# GPT-2 end to end on the GPU machine (issue 7): record generation with every
# replayable option, replay it in every mode (isolated kernels timed in
# context), output checks in every pass; then isolated mode out of context
# (the old behaviour, which trips PyTorch's embedding assertion); then the
# same with the 3-iteration recording of the issue when time allows.
# BIN: tracer, libtracer_cupti.so, replay; OUT: results; EX: the example.
#   BIN=.dev-G OUT=$OUT EX=examples/transformer_inference.py bash gpt2.sh
set -uo pipefail
BIN=${BIN:-.}
OUT=${OUT:-/tmp/gpt2}
EX=${EX:-examples/transformer_inference.py}
R="$BIN/replay"
mkdir -p "$OUT/logs"
work=$(mktemp -d)
T0=$(date +%s)
rec() { # NAME ITERATIONS LIMIT
    local s=$(date +%s)
    timeout "$3" "$BIN/tracer" -q --force --replayable --capture-data --gpu-timestamps \
        --cupti-injection "$BIN/libtracer_cupti.so" -o "$work/$1.rec" -- python3 "$EX" --iterations "$2" > "$OUT/logs/$1.record.log" 2>&1
    echo "== record $1 (--iterations $2): exit $? in $(( $(date +%s) - s )) s"
    tail -2 "$OUT/logs/$1.record.log"
    "$BIN/tracer" summary "$work/$1.rec" 2>&1 | grep -E "replayable|records:"
}
run() { # NAME REC LIMIT ARGS...
    local name=$1 r=$2 limit=$3; shift 3
    local s=$(date +%s)
    timeout "$limit" "$R" "$work/$r.rec" --report "$OUT/logs/$name.json" "$@" > "$OUT/logs/$name.log" 2>&1
    local rc=$?
    echo "== $name (exit $rc, $(( $(date +%s) - s )) s): $*"
    echo "device assertion lines: $(grep -c Assertion "$OUT/logs/$name.log")"
    tr '\r' '\n' < "$OUT/logs/$name.log" | grep -vE "Assertion|^\s*$|iteration [0-9]+/|isolated: [0-9]+/|energy: |^output check: .*identical$" | cut -c1-220 | tail -45
}
rec gpt2 1 100
"$R" plan "$work/gpt2.rec" > "$OUT/logs/gpt2.plan.txt" 2>&1
run gpt2_full gpt2 110 --mode sequence,timed,graph,isolated --iterations 3 --warmup 1 --energy-seconds 3 --check-every-pass
run gpt2_isolated_out_of_context gpt2 40 --mode isolated --isolated-out-of-context
if [ $(( $(date +%s) - T0 )) -lt 130 ]; then
    rec gpt2_3it 3 80
    run gpt2_3it_full gpt2_3it 80 --mode sequence,graph,isolated --iterations 3 --warmup 1 --energy-seconds 3 --check-every-pass
fi
for f in "$OUT"/logs/*.json; do gzip "$f"; done
tar czf "$OUT/gpt2_logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
echo "total $(( $(date +%s) - T0 )) s"
