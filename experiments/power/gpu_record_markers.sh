#!/usr/bin/env bash
# On the GPU machine, as root: measures NVML's update periods and records
# the examples with phase markers and NVML power sampling (the default).
#   nice -n 10 cargo build --release -p tracer; copy target/release/tracer,
#   examples/*.py and experiments/power/{nvml_update_periods.py,gpu_record_markers.sh}
#   into one directory D; then there: bash D/gpu_record_markers.sh D/tracer OUTDIR
# Writes OUTDIR/{nvml_update_periods.txt,nvml_changes.csv.gz,
# transformer_inference_markers.jsonl.gz,simple_inference_markers.jsonl.gz,record_markers.log}.
set -euo pipefail
tracer=$(realpath "${1:?usage: gpu_record_markers.sh TRACER OUTDIR}")
out=${2:?usage: gpu_record_markers.sh TRACER OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
ex=$here/examples
[ -d "$ex" ] || ex=$here/../../examples
mkdir -p "$out"
export PYTHONUNBUFFERED=1
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
check() {
  python3 - "$1" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
h, f = lines[0], lines[-1]
print("header.power:", json.dumps(h["power"]))
print("header.markers:", json.dumps(h["markers"]))
print("footer.power:", json.dumps(f.get("power")))
print("footer.markers:", json.dumps(f.get("markers")))
for l in lines:
    if l.get("type") == "marker":
        print("marker", l["ts"], l["pid"], l["tid"], l["op"], l["label"], l.get("tokens", ""))
p = [l for l in lines if l.get("type") == "power"]
if p:
    ts = [l["ts"] for l in p]
    d = sorted((b - a) / 1e6 for a, b in zip(ts, ts[1:]))
    print(f"power lines: {len(p)}, spacing ms median {d[len(d)//2]:.3f} p99 {d[int(len(d)*0.99)]:.3f} max {d[-1]:.3f}")
    print("first:", json.dumps(p[0]))
    print("last:", json.dumps(p[-1]))
    print(f"energy over the trace: {(p[-1]['energy_mj'] - p[0]['energy_mj']) / 1e3:.1f} J in {(ts[-1] - ts[0]) / 1e9:.2f} s")
PY
}
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  echo "# NVML update periods"
  python3 "$here/nvml_update_periods.py" "$out/nvml_update_periods.txt" "$out/nvml_changes.csv" 8
  echo "# transformer_inference (3 generation iterations), markers + power (defaults)"
  "$tracer" --force -o "$out/transformer_inference_markers.jsonl" -- python3 "$ex/transformer_inference.py" --iterations 3
  check "$out/transformer_inference_markers.jsonl"
  echo "# simple_inference, markers + power"
  "$tracer" --force -o "$out/simple_inference_markers.jsonl" -- python3 "$ex/simple_inference.py"
  check "$out/simple_inference_markers.jsonl"
} 2>&1 | tee "$out/record_markers.log"
gzip -f -9 "$out"/*.jsonl "$out"/nvml_changes.csv
ls -la "$out"
