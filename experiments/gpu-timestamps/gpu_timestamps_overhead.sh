#!/usr/bin/env bash
# Run as used on the GPU machine (no Rust there): next to a release tracer and
# its injection library, with the check scripts:
#   mkdir -p .dev-cupti && cp target/release/{tracer,libtracer_cupti.so} \
#     experiments/gpu-timestamps/{cupti_offsets.sh,gpu_timestamps_*.sh} scripts/gpu_timestamps_check.py .dev-cupti/
#   then there, as root:  bash .dev-cupti/SCRIPT   (outputs under $OUT)
# device call 2: overhead of --gpu-timestamps vs plain tracer vs untraced,
# GPT-2 generation (examples/transformer_inference.py --iterations 4),
# modes interleaved, ROUNDS rounds; per-iteration times from the example.
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
rounds=${1:-3}
ex=../examples/transformer_inference.py
log=$OUT/overhead_runs.txt
run() { # mode cmd... ; appends "round mode iteration seconds"
  local r=$1 mode=$2; shift 2
  local t0=$(date +%s.%N)
  "$@" python3 $ex --iterations 4 2>$OUT/last_stderr.txt | awk -v m="$mode" -v r="$r" '/^\[iteration/ {sub("s,","",$3); print r, m, $2, $3}' | tee -a $log
  echo "# round $r $mode wall $(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{printf "%.2f", b-a}') s" | tee -a $log
}
for r in $(seq $rounds); do
  run $r untraced env
  run $r tracer ./tracer -q --force -o /tmp/t.jsonl --
  run $r gpu_timestamps ./tracer -q --force --gpu-timestamps -o /tmp/g.jsonl --
  grep -h "warning" $OUT/last_stderr.txt | head -3
done
python3 gpu_timestamps_check.py /tmp/g.jsonl > $OUT/check_overhead_run.txt; cat $OUT/check_overhead_run.txt
python3 - $log <<'PY' | tee $OUT/overhead_summary.txt
import sys, statistics as st
from collections import defaultdict
t = defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith("#"): continue
    r, m, it, s = line.split(); t[m].append(float(s))
base = st.median(t["untraced"])
print(f"{'mode':<16} {'n':>3} {'median s':>9} {'min':>7} {'max':>7} {'ratio':>6}")
for m in ["untraced", "tracer", "gpu_timestamps"]:
    v = t[m]
    print(f"{m:<16} {len(v):>3} {st.median(v):>9.4f} {min(v):>7.4f} {max(v):>7.4f} {st.median(v)/base:>6.3f}")
print(f"gpu_timestamps / tracer: {st.median(t['gpu_timestamps'])/st.median(t['tracer']):.3f}")
PY
