#!/usr/bin/env bash
# How close the inferred and bound GPU timelines come to the measured one
# (docs/analysis.md, "Comparing timelines"). On the GPU machine, as root, with
# a release tracer built elsewhere that has --gpu-timestamps:
#   experiments/gpu-timestamps/gpu_compare_timelines.sh .device-bin/tracer OUTDIR [BATCH]
# Records transformer_inference.py twice with measured GPU activity: run A
# calibrates the kernel durations, run B is inferred from its launches with
# A's durations and compared with B's own measurements (so the calibration
# never sees the run it is judged on). Writes OUTDIR/{calib,eval}.jsonl.gz,
# durations.json, compare.json, compare.txt, gaps_{measured,inferred,bound}.txt.
set -euo pipefail
tracer=${1:?usage: gpu_compare_timelines.sh TRACER OUTDIR [BATCH]}
out=${2:?usage: gpu_compare_timelines.sh TRACER OUTDIR [BATCH]}
batch=${3:-}
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
export PYTHONUNBUFFERED=1
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
args=(--iterations 3)
if [ -n "$batch" ]; then args+=(--batch "$batch"); fi
for run in calib eval; do
  "$tracer" --gpu-timestamps --force -q -o "$out/$run.jsonl" -- python3 "$here/examples/transformer_inference.py" "${args[@]}"
  gzip -f "$out/$run.jsonl"
done
"$tracer" calibrate "$out/calib.jsonl.gz" -o "$out/durations.json"
"$tracer" compare "$out/eval.jsonl.gz" --durations "$out/durations.json" --json > "$out/compare.json"
"$tracer" compare "$out/eval.jsonl.gz" --durations "$out/durations.json" | tee "$out/compare.txt"
"$tracer" gaps "$out/eval.jsonl.gz" --timeline measured > "$out/gaps_measured.txt"
"$tracer" gaps "$out/eval.jsonl.gz" --timeline inferred --durations "$out/durations.json" > "$out/gaps_inferred.txt"
"$tracer" gaps "$out/eval.jsonl.gz" --timeline bound > "$out/gaps_bound.txt"
ls -la "$out"
