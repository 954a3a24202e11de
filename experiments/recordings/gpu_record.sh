#!/usr/bin/env bash
# Makes the recordings committed in traces/ on a GPU machine, with a release
# tracer built elsewhere (the GPU machine has no Rust toolchain):
#   cargo build --release && mkdir -p .device-bin && cp target/release/tracer .device-bin/
#   then on the GPU machine, as root:  experiments/recordings/gpu_record.sh .device-bin/tracer OUTDIR
# Writes OUTDIR/{simple_inference,transformer_inference,transformer_profiled}.jsonl.gz
# and OUTDIR/record.log (the programs' and tracer's output, incl. the
# torch.profiler comparison).
set -euo pipefail
tracer=${1:?usage: gpu_record.sh TRACER OUTDIR}
out=${2:?usage: gpu_record.sh TRACER OUTDIR}
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
export PYTHONUNBUFFERED=1
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  echo "# simple_inference"
  "$tracer" --force -o "$out/simple_inference.jsonl" -- python3 "$here/examples/simple_inference.py"
  echo "# transformer_inference (3 generation iterations)"
  "$tracer" --force -o "$out/transformer_inference.jsonl" -- python3 "$here/examples/transformer_inference.py" --iterations 3
  echo "# the same workload (1 iteration) under torch.profiler AND tracer: both count the same run"
  "$tracer" --force -o "$out/transformer_profiled.jsonl" -- \
    python3 "$here/examples/transformer_inference.py" --iterations 1 --profile-kernels
} 2>&1 | tee "$out/record.log"
gzip -f -9 "$out"/*.jsonl
ls -la "$out"
