#!/usr/bin/env bash
# One device call (kind nvidia-h100-x2, as root, from the repo root, with
# .device-bin/{tracer,libtracer_cupti.so,replay} carried, release builds):
#   bash experiments/multi-gpu/gpu_graph_ids_and_rank_replay.sh
# 1. issue 17: CUPTI's graph/node ids on the kernels of graph launches
#    (experiments/graphs/gpu_graph_ids.sh, GPU 0): offsets from CUPTI's headers, gpu
#    lines with ids, the report's CUDA graph notes;
# 2. issue 22: each rank of a 2-rank tensor-parallel job replayed alone on
#    its own GPU (experiments/multi-gpu/gpu_rank_replay.sh).
# Outputs under $OUT (graph_ids/, log_rank_replay.txt, replay_rank{0,1}.json).
set -uo pipefail
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT/graph_ids"
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
# The capture trace is large: it stays in /tmp, only the log and offsets come back.
CUDA_VISIBLE_DEVICES=0 timeout 150 bash experiments/graphs/gpu_graph_ids.sh "$(realpath .device-bin/tracer)" /tmp/graph_ids
echo "gpu_graph_ids exit: $?"
cp /tmp/graph_ids/graph_ids.log /tmp/graph_ids/cupti_offsets_cuda13.0.txt "$OUT/graph_ids/" 2>/dev/null
OUT=$OUT bash experiments/multi-gpu/gpu_rank_replay.sh
