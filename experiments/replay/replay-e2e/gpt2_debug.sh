#!/bin/bash
# GPT-2 replay diagnosis (issue 7) on the GPU machine: record GPT-2
# generation (1 iteration) with every replayable option, then replay it in
# several configurations with output checks in every pass and memory probes
# on the embedding lookups' index tensors. BIN: tracer, libtracer_cupti.so,
# replay and gpt2_probe_args.py; OUT: results; EX: the example script.
#   BIN=.dev-G OUT=$OUT EX=examples/transformer_inference.py bash gpt2_debug.sh
# The committed outputs (docs/replay/gpt2_2026-11-22/call1_diagnosis/) were
# made by a build that also had --pre-reserve (host placeholders over the
# recorded windows while the context is created: e4 and e6 used it; it moved
# more windows, 13/14 instead of 4/14, and was removed) and whose isolated
# mode was what --isolated-out-of-context does now (e6).
set -uo pipefail
BIN=${BIN:-.}
OUT=${OUT:-/tmp/gpt2-debug}
EX=${EX:-examples/transformer_inference.py}
R="$BIN/replay"
mkdir -p "$OUT/logs"
work=$(mktemp -d)
t0=$(date +%s)
timeout 110 "$BIN/tracer" -q --force --replayable --capture-data --gpu-timestamps \
    --cupti-injection "$BIN/libtracer_cupti.so" -o "$work/gpt2.rec" -- python3 "$EX" --iterations 1 > "$OUT/logs/record.log" 2>&1
echo "record exit $? after $(( $(date +%s) - t0 )) s"; tail -3 "$OUT/logs/record.log"
"$BIN/tracer" summary "$work/gpt2.rec" 2>&1 | grep -E "replayable|records:"
"$R" plan "$work/gpt2.rec" 2>&1 | tee "$OUT/logs/plan.txt"
python3 "$BIN/gpt2_probe_args.py" "$work/gpt2.rec/trace.jsonl" probes > "$work/probes" 2> "$OUT/logs/probes.txt"
cat "$OUT/logs/probes.txt" | cut -c1-400; cat "$work/probes"
P=$(sed 's/^/--probe /' "$work/probes" | tr '\n' ' ')
( timeout 60 python3 "$BIN/gpt2_probe_args.py" "$work/gpt2.rec/trace.jsonl" scan > "$OUT/logs/scan.txt" 2>&1 ) &
scanpid=$!
run() { # NAME LIMIT ARGS...: one replay; its log in logs/NAME.log; the lines that matter printed
    local name=$1 limit=$2; shift 2
    local s=$(date +%s)
    timeout "$limit" "$R" "$work/gpt2.rec" --report "$OUT/logs/$name.json" "$@" > "$OUT/logs/$name.log" 2>&1
    local rc=$?
    echo "== $name (exit $rc, $(( $(date +%s) - s )) s): $*"
    tr '\r' '\n' < "$OUT/logs/$name.log" | grep -E "^(setup|moved|pre-reserve|checks|probe|replay: error|  sequence|  graph|  predicted|coverage|memory|recorded|energy|output check: .*differ)" \
        | sed -E 's/probe: pass ([0-9]+) before line ([0-9]+) (0x[0-9a-f]+) \(replay (0x[0-9a-f]+)\) 128 bytes: i64/probe p\1 L\2 \3->\4:/' | cut -c1-260 | head -60
}
E="--mode sequence --iterations 4 --warmup 0 --check-every-pass"
run e1_zero 40 $E $P
run e2_ff 40 $E --fill 0xff $P
CUDA_LAUNCH_BLOCKING=1 run e3_ff_blocking 40 $E --fill 0xff $P
CUDA_LAUNCH_BLOCKING=1 run e5_forcereloc_ff_blocking 40 $E --fill 0xff --force-relocation $P
wait $scanpid
head -40 "$OUT/logs/scan.txt" | cut -c1-250
run e6_full 70 --isolated-out-of-context --mode sequence,graph,isolated --iterations 3 --warmup 1 --energy-seconds 3 --check-every-pass
tr '\r' '\n' < "$OUT/logs/e6_full.log" | grep -vE "Assertion|^\s*$|iteration [0-9]|isolated: [0-9]" | tail -40 | cut -c1-250

gzip -c "$work/gpt2.rec/manifest.json" > "$OUT/logs/manifest.json.gz"
tar czf "$OUT/gpt2_debug_logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
ls -la "$OUT"
