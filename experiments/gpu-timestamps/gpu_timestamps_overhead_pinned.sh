#!/usr/bin/env bash
# Run as used on the GPU machine (no Rust there): next to a release tracer and
# its injection library, with the check scripts:
#   mkdir -p .dev-cupti && cp target/release/{tracer,libtracer_cupti.so} \
#     experiments/gpu-timestamps/{cupti_offsets.sh,gpu_timestamps_*.sh} scripts/gpu_timestamps_check.py .dev-cupti/
#   then there, as root:  bash .dev-cupti/SCRIPT   (outputs under $OUT)
# device call 3: overhead again with the Python process pinned to 4 fixed
# cores (taskset -c 2-5) and the tracer on another (taskset -c 8), to cut the
# run-to-run spread seen in call 2; then a two-process run sharing the FIFO.
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
start=$(date +%s)
ex=../examples/transformer_inference.py
log=$OUT/overhead_pinned_runs.txt
run() {
  local r=$1 mode=$2; shift 2
  "$@" taskset -c 2-5 python3 $ex --iterations 6 2>$OUT/last_stderr.txt | awk -v m="$mode" -v r="$r" '/^\[iteration/ {sub("s,","",$3); print r, m, $2, $3}' >> $log
}
for r in 1 2 3 4 5; do
  [ $(( $(date +%s) - start )) -gt 170 ] && { echo "# stopped after $((r-1)) rounds (time)" >> $log; break; }
  run $r untraced env
  run $r tracer taskset -c 8 ./tracer -q --force -o /tmp/t.jsonl --
  run $r gpu_timestamps taskset -c 8 ./tracer -q --force --gpu-timestamps -o /tmp/g.jsonl --
done
cat $log
python3 - $log <<'PY' | tee $OUT/overhead_pinned_summary.txt
import sys, statistics as st
from collections import defaultdict
t = defaultdict(list); per = defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith("#"): continue
    r, m, it, s = line.split(); t[m].append(float(s)); per[(r, m)].append(float(s))
base = st.median(t["untraced"])
print(f"{'mode':<16} {'n':>3} {'median s':>9} {'min':>7} {'max':>7} {'ratio':>6}")
for m in ["untraced", "tracer", "gpu_timestamps"]:
    v = t[m]
    print(f"{m:<16} {len(v):>3} {st.median(v):>9.4f} {min(v):>7.4f} {max(v):>7.4f} {st.median(v)/base:>6.3f}")
print("per round (median of its iterations): untraced tracer gpu_timestamps | gpu/tracer")
for r in sorted({k[0] for k in per}):
    u, tr, g = (st.median(per[(r, m)]) for m in ["untraced", "tracer", "gpu_timestamps"])
    print(f"  round {r}: {u:.4f} {tr:.4f} {g:.4f} | {g/tr:.3f}")
PY
python3 gpu_timestamps_check.py /tmp/g.jsonl | tail -4
echo "## two processes, one FIFO"
./tracer --gpu-timestamps --force -o $OUT/two.jsonl -- sh -c 'python3 ../examples/simple_inference.py >/dev/null; python3 ../examples/simple_inference.py >/dev/null' 2>&1 | tail -3
python3 gpu_timestamps_check.py $OUT/two.jsonl
gzip -9 $OUT/two.jsonl
echo "elapsed $(( $(date +%s) - start )) s"
