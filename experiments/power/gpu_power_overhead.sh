#!/usr/bin/env bash
# On the GPU machine, as root: what NVML sampling costs. Times each NVML call
# of a sampling round, then runs transformer_inference.py --iterations 10
# under tracer with --no-power, the default 10 ms sampling and 100 ms
# sampling, interleaved, twice each, and prints the generate() times.
#   bash D/gpu_power_overhead.sh D/tracer OUTDIR   (D as for gpu_record_markers.sh)
set -euo pipefail
tracer=$(realpath "${1:?usage: gpu_power_overhead.sh TRACER OUTDIR}")
out=${2:?usage: gpu_power_overhead.sh TRACER OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
ex=$here/examples
[ -d "$ex" ] || ex=$here/../../examples
mkdir -p "$out"
export PYTHONUNBUFFERED=1
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  python3 "$here/nvml_call_costs.py"
  for round in 1 2; do
    for mode in no-power p10 p100; do
      case $mode in
        no-power) flags=(--no-power) ;;
        p10) flags=() ;;
        p100) flags=(--power-interval-ms 100) ;;
      esac
      echo "## round $round mode $mode"
      "$tracer" -q --force -o /tmp/ovh.jsonl "${flags[@]}" -- python3 "$ex/transformer_inference.py" --iterations 10 | grep -E "iteration|warmup"
      python3 - <<'PY'
import json
f = json.loads(open("/tmp/ovh.jsonl").readlines()[-1])
p = f.get("power", {})
print("footer.power:", json.dumps({k: p.get(k) for k in ("rounds", "missed_ticks", "round_us_mean", "round_us_max", "dropped")}))
PY
    done
  done
} 2>&1 | tee "$out/power_overhead.log"
