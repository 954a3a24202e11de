#!/usr/bin/env bash
# On a GPU machine with 2 or more GPUs, as root: tensor-parallel generation
# (examples/tp_inference.py) under `torchrun --nproc-per-node 2`, traced as
# one job, then checked: every launch line's device is its rank's
# LOCAL_RANK, exec lines carry rank/local_rank, NCCL kernels are counted as
# their own family, launches per rank against torch.profiler's count;
# report, gaps and the Perfetto export per GPU and rank.
#   nice -n 10 cargo build --release -p tracer; copy target/release/tracer,
#   examples/{tp_inference.py,tracer_markers.py,profiler_counts.py} and this script into one
#   directory D; then there: bash D/gpu_multi_gpu.sh D/tracer OUTDIR
# Writes OUTDIR/{tp.jsonl,tp_gpu.jsonl,*.txt,*.json,multi_gpu.log}.
set -euo pipefail
tracer=$(realpath "${1:?usage: gpu_multi_gpu.sh TRACER OUTDIR}")
out=${2:?usage: gpu_multi_gpu.sh TRACER OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
ex=$here/examples
[ -d "$ex" ] || ex=$here
[ -f "$ex/tp_inference.py" ] || ex=$here/../../examples
mkdir -p "$out"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
torchrun=$(command -v torchrun)
check() {
  python3 - "$1" <<'PY'
import collections, json, sys
path = sys.argv[1]
lines = [json.loads(l) for l in open(path) if l.strip()]
h = lines[0]
print("header gpus:", json.dumps(h.get("gpus")))
local = {}
for l in lines:
    if l.get("type") == "process" and l.get("op") == "exec" and "local_rank" in l:
        local[l["pid"]] = l["local_rank"]
        print(f"exec pid {l['pid']} rank {l.get('rank')} local_rank {l['local_rank']} {l['filename']}")
launch = collections.Counter()
wrong = collections.Counter()
unknown = collections.Counter()
nccl = collections.Counter()
for l in lines:
    if l.get("op") != "launch" or l.get("type") != "kernel":
        continue
    p = l["pid"]
    launch[p] += 1
    dv = l.get("device")
    if dv is None:
        unknown[p] += 1
    elif p in local and dv != local[p]:
        wrong[p] += 1
    k = l.get("kernel") or ""
    if "ncclKernel" in k or "ncclDevKernel" in k:
        nccl[p] += 1
for p in sorted(launch):
    print(f"pid {p} (local_rank {local.get(p)}): launches {launch[p]}, device unknown {unknown[p]}, "
          f"device != local_rank {wrong[p]}, nccl launches {nccl[p]}")
print("CHECK devices:", "ok" if not sum(wrong.values()) and not sum(unknown.values()) else "MISMATCH")
PY
}
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv,noheader | tr '\n' ';')"
  echo "# tensor-parallel generation, 2 ranks, markers + power, torch.profiler counts per rank"
  "$tracer" --force -o "$out/tp.jsonl" -- "$torchrun" --nproc-per-node 2 "$ex/tp_inference.py" --profile-kernels
  check "$out/tp.jsonl"
  "$tracer" report "$out/tp.jsonl" | tee "$out/tp_report.txt"
  "$tracer" report --json "$out/tp.jsonl" > "$out/tp_report.json"
  "$tracer" gaps "$out/tp.jsonl" > "$out/tp_gaps.txt"
  "$tracer" export --force -o "$out/tp.perfetto.json" "$out/tp.jsonl"
  "$tracer" summary "$out/tp.jsonl" | head -40
  echo "# the same with --gpu-timestamps: measured intervals per GPU, inferred vs measured"
  "$tracer" --gpu-timestamps --force -o "$out/tp_gpu.jsonl" -- "$torchrun" --nproc-per-node 2 "$ex/tp_inference.py"
  check "$out/tp_gpu.jsonl"
  "$tracer" report "$out/tp_gpu.jsonl" | tee "$out/tp_gpu_report.txt"
  "$tracer" gaps "$out/tp_gpu.jsonl" > "$out/tp_gpu_gaps.txt"
  "$tracer" compare "$out/tp_gpu.jsonl" | tee "$out/tp_gpu_compare.txt" || true
} 2>&1 | tee "$out/multi_gpu.log"
ls -la "$out"
