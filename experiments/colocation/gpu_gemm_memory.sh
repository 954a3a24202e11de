#!/usr/bin/env bash
# Whether memory placement explains why the fp16 matrix-product tenant of the co-location runs replays
# 6 % slower alone (699.7 ms) than the real workload runs (0.66 s). Is it the
# memory (replay's VMM windows at the recorded addresses against cuMemAlloc)?
# One device call (≤ 2 min, .device-bin carried):  OUT=$OUT bash experiments/colocation/gpu_gemm_memory.sh
set -uo pipefail
T=$(realpath .device-bin/tracer)
R=$(realpath .device-bin/replay)
OUT=${OUT:-/tmp/gemm-memory-out}
mkdir -p "$OUT"
REC=/tmp/gm_gemm.rec
{
echo "### the workload untraced, three times"
for k in 1 2 3; do timeout 60 python3 experiments/colocation/colocation_workloads.py gemm; done
rm -rf "$REC"
timeout 60 "$T" record --replayable --gpu-timestamps -q --force -o "$REC" -- python3 experiments/colocation/colocation_workloads.py gemm
echo "record exit: $?"
for m in vmm malloc; do
    echo "### replay, --device-memory $m"
    timeout 60 "$R" "$REC" --mode sequence --iterations 3 --warmup 1 --device-memory "$m" \
        --report "$OUT/gemm_$m.json" 2>&1 | grep -E "mode |kernels|busy|error" | head -8
done
} 2>&1 | tee "$OUT/gemm_memory.log"
