#!/usr/bin/env bash
# Replaying each rank of a two-rank tensor-parallel job alone
# on its own GPU (docs/multi-gpu.md "Replay"). One device call, kind
# nvidia-h100-x2 (2 GPUs), as root, from the repo root, with
# .device-bin/{tracer,libtracer_cupti.so,replay} carried (release builds):
#   bash experiments/multi-gpu/gpu_rank_replay.sh
# Records examples/tp_inference.py under `torchrun --nproc-per-node 2`
# (one iteration, 8 tokens) with --replayable --capture-data
# --gpu-timestamps, then `replay plan` (no selection: the processes note),
# `replay --rank 0 --device 0` and `replay --rank 1 --device 1`: coverage
# (collectives skipped with their reason and measured time), the time error
# of the kernels that ran, the output checks (not comparable after the first
# skipped collective). Writes $OUT/log_rank_replay.txt and the two reports.
set -uo pipefail
T=$(realpath .device-bin/tracer)
R=$(realpath .device-bin/replay)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/rank_replay_out}
mkdir -p "$OUT"
log=$OUT/log_rank_replay.txt
{
nvidia-smi -L
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
mkdir -p /tmp/tpd && cp examples/tp_inference.py examples/tracer_markers.py examples/profiler_counts.py /tmp/tpd/
echo "## record: 2 ranks, --replayable --capture-data --gpu-timestamps, one iteration"
timeout 200 "$T" record --replayable --capture-data --gpu-timestamps -q --force -o /tmp/tp.rec -- \
  torchrun --nproc-per-node 2 /tmp/tpd/tp_inference.py --iterations 1 --new-tokens 8
echo "record exit: $?"
echo "## replay plan, no selection (expect the 'recording has 2 processes' note)"
"$R" plan /tmp/tp.rec 2>&1 | tail -20
for rank in 0 1; do
  echo "## replay plan --rank $rank"
  "$R" plan /tmp/tp.rec --rank $rank 2>&1 | tail -20
  echo "## replay --rank $rank --device $rank (sequence,isolated)"
  timeout 100 "$R" /tmp/tp.rec --rank $rank --device $rank --mode sequence,isolated --iterations 3 \
    --report "$OUT/replay_rank$rank.json" 2>&1 | tail -60
  echo "replay --rank $rank exit: $?"
done
} 2>&1 | tee "$log"
