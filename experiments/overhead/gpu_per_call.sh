#!/usr/bin/env bash
# Per-call cost on the GPU machine (no Rust there): the per-call
# pass of `cargo xtask bench collector` by bench/per_call.py, with the
# carried release tracer, for cuLaunchKernel and cuMemcpyHtoDAsync of the
# fake libcuda (defaults: 200,000 calls, 8 interleaved repetitions, 1 thread).
# From the repo root, as root:  bash experiments/overhead/gpu_per_call.sh
# Writes per_call_<date>_<host>.{json,md} under $OUT and prints the tables.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
out=${OUT:-.}
echo "nproc: $(nproc)"
echo "cpu: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "kernel: $(uname -r)"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing || true
python3 bench/per_call.py --tracer .device-bin/tracer --funcs launch,memcpy --out "$out"
