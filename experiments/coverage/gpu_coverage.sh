#!/usr/bin/env bash
# Capture coverage ground truth on the GPU machine (issue 29): each workload recorded with
# `tracer record --gpu-timestamps --check-coverage` (CUPTI's driver-API callbacks count
# every driver call per function; the footer compares them with the trace) and
# summarised (experiments/coverage/summarize.py). With a release build carried:
#   cargo xtask build --release && mkdir -p .device-bin && cp target/release/{tracer,libtracer_cupti.so} .device-bin/
#   then on the GPU machine, as root, from the repo root:  bash experiments/coverage/gpu_coverage.sh
# Writes $OUT/coverage.md (the tables), $OUT/footers.jsonl and $OUT/coverage.log.
set -u
cd "$(dirname "$0")/../.."
tracer=${TRACER:-.device-bin/tracer}
out=${OUT:-/tmp/coverage}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
: > "$out/coverage.md"; : > "$out/footers.jsonl"
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) $(nvcc --version | tail -1)"
  nvcc -O2 -o /tmp/runtime_calls experiments/coverage/runtime_calls.cu || echo "nvcc failed"
} > "$out/coverage.log" 2>&1
run() {
  local name=$1; shift
  echo "### $name: $*" >> "$out/coverage.log"
  "$tracer" record --gpu-timestamps --check-coverage --force -o "/tmp/cov_$name.jsonl" -- "$@" >> "$out/coverage.log" 2>&1
  echo "### $name: exit $?" >> "$out/coverage.log"
  tail -n1 "/tmp/cov_$name.jsonl" >> "$out/footers.jsonl"
  tail -n1 "/tmp/cov_$name.jsonl" | python3 experiments/coverage/summarize.py "$name" >> "$out/coverage.md"
}
run cuda_cpp /tmp/runtime_calls
run torch_eager python3 experiments/coverage/torch_eager.py
run torch_compile python3 experiments/coverage/torch_compiled.py
run cupy python3 experiments/coverage/cupy_prog.py
run jax python3 experiments/coverage/jax_prog.py
grep -E "^## |equal\*\*" "$out/coverage.md"
