#!/usr/bin/env bash
# Two device calls (kind nvidia-h100-x2, as root, from the repo root, with
# .device-bin/{tracer,libtracer_cupti.so,replay} carried):
#   bash experiments/multi-gpu/gpu_graphs_and_tp.sh tp      issue 22's tensor-parallel job on
#       2 GPUs (experiments/multi-gpu/gpu_multi_gpu.sh, then a --replayable recording of it
#       and what replay makes of it) and issue 18's container-like run
#       (experiments/containers/gpu_container_check.sh)
#   bash experiments/multi-gpu/gpu_graphs_and_tp.sh graphs  issue 17's CUDA graph checks
#       (docs/graphs-gpu-check.md) on GPU 0
# Writes at most 8 files to $OUT (the device tool's limit).
set -uo pipefail
T=$(realpath .device-bin/tracer)
R=$(realpath .device-bin/replay)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
part=${1:?usage: gpu_graphs_and_tp.sh tp|graphs}
log=$OUT/log_$part.txt
{
nvidia-smi -L
if [ "$part" = tp ]; then
echo "## issue 22: tensor-parallel generation, 2 ranks"
mkdir -p /tmp/tpd && cp examples/tp_inference.py examples/tracer_markers.py examples/profiler_counts.py experiments/multi-gpu/gpu_multi_gpu.sh /tmp/tpd/
bash /tmp/tpd/gpu_multi_gpu.sh "$T" /tmp/tp
for f in tp_report.txt tp_gaps.txt tp_gpu_report.txt tp_gpu_gaps.txt tp_gpu_compare.txt; do echo "=== $f"; cat /tmp/tp/$f; done
gzip -c /tmp/tp/tp.jsonl > $OUT/tp.jsonl.gz; gzip -c /tmp/tp/tp_gpu.jsonl > $OUT/tp_gpu.jsonl.gz
python3 -c "import json;d=json.load(open('/tmp/tp/tp.perfetto.json'));ev=d['traceEvents'] if isinstance(d,dict) else d;print('perfetto process names:',sorted({e['args']['name'] for e in ev if e.get('ph')=='M' and e.get('name')=='process_name'}))"
echo "## issue 22: --replayable, one iteration"
timeout 200 "$T" record --replayable -q --force -o /tmp/tp.rec -- torchrun --nproc-per-node 2 /tmp/tpd/tp_inference.py --iterations 1 --new-tokens 8
"$R" plan /tmp/tp.rec 2>&1 | tail -30
timeout 120 "$R" /tmp/tp.rec 2>&1 | tail -40; echo "replay exit: $?"
echo "## issue 18: container-like run"
timeout 240 bash experiments/containers/gpu_container_check.sh "$T" /tmp/ctr; echo "container check exit: $?"
else
echo "## issue 17: CUDA graphs"
cd examples
"$T" record --gpu-timestamps -q --force -o $OUT/g_capture.jsonl.zst -- python3 graphs_inference.py capture --replays 50
python3 graphs_inference.py capture --replays 1 --count-kernels
"$T" report $OUT/g_capture.jsonl.zst
for b in 1 8; do for i in eager compiled; do
  echo "=== decode $i batch $b"
  "$T" record --gpu-timestamps -q --force -o /tmp/g_${i}_b$b.jsonl.zst -- python3 graphs_inference.py decode --impl $i --batch $b --layers 6 --tokens 32
  "$T" report /tmp/g_${i}_b$b.jsonl.zst; "$T" gaps /tmp/g_${i}_b$b.jsonl.zst | head -30
done; done
cp /tmp/g_compiled_b1.jsonl.zst /tmp/g_eager_b1.jsonl.zst /tmp/g_compiled_b8.jsonl.zst /tmp/g_eager_b8.jsonl.zst $OUT/
fi
} > $log 2>&1
tail -c 6000 $log
