#!/usr/bin/env bash
# Whether CUPTI's kernel records of graph launches
# carry graph and node ids, and how many does `tracer report` tie to their
# node and launch? Run on the GPU machine, as root, with a release tracer
# and libtracer_cupti.so built elsewhere (same directory):
#   cargo xtask build --release && mkdir -p .device-bin && cp target/release/{tracer,libtracer_cupti.so} .device-bin/
#   then there:  experiments/graphs/gpu_graph_ids.sh .device-bin/tracer OUTDIR
# Prints: CUPTI's offsets (incl. graphNodeId/graphId, to commit as
# docs/gpu-timestamps/cupti_offsets_cuda13.0.txt), the gpu kernel lines with
# and without graph ids, and the report's CUDA graph notes.
set -euo pipefail
tracer=${1:?usage: gpu_graph_ids.sh TRACER OUTDIR}
out=${2:?usage: gpu_graph_ids.sh TRACER OUTDIR}
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
export PYTHONUNBUFFERED=1
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
  "$here/experiments/gpu-timestamps/cupti_offsets.sh" > "$out/cupti_offsets_cuda13.0.txt" && grep -E "graph|sizeof KT" "$out/cupti_offsets_cuda13.0.txt"
  "$tracer" record --gpu-timestamps -q --force -o "$out/g_capture.jsonl" -- python3 "$here/examples/graphs_inference.py" capture --replays 50
  echo "# gpu kernel lines: with graph_id / without"
  grep '"type":"gpu"' "$out/g_capture.jsonl" | grep '"op":"kernel"' | grep -c '"graph_id"' || true
  grep '"type":"gpu"' "$out/g_capture.jsonl" | grep '"op":"kernel"' | grep -vc '"graph_id"' || true
  echo "# distinct (graph_id, correlation_id) = measured graph launches"
  grep -o '"correlation_id":[0-9]*.*"graph_id":[0-9]*' "$out/g_capture.jsonl" | sed -E 's/.*"correlation_id":([0-9]+).*"graph_id":([0-9]+)/\2 \1/' | sort -u | wc -l
  echo "# report notes on CUDA graphs"
  "$tracer" report "$out/g_capture.jsonl" | grep "CUDA graphs" || true
} 2>&1 | tee "$out/graph_ids.log"
