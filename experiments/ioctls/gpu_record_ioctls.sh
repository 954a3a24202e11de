#!/usr/bin/env bash
# Records both examples with --ioctls on a GPU machine and writes the ioctl
# analyses (see gpu_record.sh for how to build and carry the binary):
#   experiments/ioctls/gpu_record_ioctls.sh .device-bin/tracer OUTDIR
set -euo pipefail
tracer=${1:?usage: gpu_record_ioctls.sh TRACER OUTDIR}
out=${2:?usage: gpu_record_ioctls.sh TRACER OUTDIR}
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
export PYTHONUNBUFFERED=1
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  "$tracer" --ioctls --force -o "$out/simple_inference_ioctls.jsonl" -- python3 "$here/examples/simple_inference.py"
  "$tracer" --ioctls --force -o "$out/transformer_inference_ioctls.jsonl" -- \
    python3 "$here/examples/transformer_inference.py" --iterations 3
} 2>&1 | tee "$out/record_ioctls.log"
for t in simple_inference_ioctls transformer_inference_ioctls; do
  "$tracer" ioctls "$out/$t.jsonl" > "$out/$t.report.txt"
  "$tracer" ioctls --json "$out/$t.jsonl" > "$out/$t.report.json"
done
gzip -f -9 "$out"/*.jsonl
ls -la "$out"
