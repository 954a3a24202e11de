#!/usr/bin/env bash
# How close the inferred GPU idle comes to CUPTI's measured idle, full and sampled (docs/idle-accuracy.md; issue 16). On the GPU machine (no Rust there): a folder
# with experiments/idle-accuracy/{this,sample_offline.py}, examples/{transformer_inference.py,
# launch_loop.py,tracer_markers.py,profiler_counts.py} and target/release/{tracer,
# libtracer_cupti.so} (release build of this branch) is carried; run as root
# with `bash FOLDER/experiments/idle-accuracy/idle_accuracy_gpu.sh` (outputs under $OUT).
# Per workload (GPT-2 generation at batch 1 and 8, the launch-bound loop), one
# process per mode, interleaved: untraced, tracer (default), tracer
# --gpu-timestamps --gpu-sample 20/200, tracer --gpu-timestamps (full),
# untraced again (the untraced-vs-untraced spread). Then `tracer gaps --json`
# of the sample and full traces, and of the full trace sampled offline
# (experiments/idle-accuracy/sample_offline.py: the same run's calibration accuracy).
# Outputs under $OUT; the summary is printed last.
set -u
cd "$(dirname "$0")/../.."
test -f experiments/idle-accuracy/sample_offline.py || { echo "not the idle branch's tree"; exit 3; }
T=$PWD/target/release/tracer
$T --help | grep -q -- --gpu-sample || { echo "carried tracer lacks --gpu-sample"; exit 3; }
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/examples
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
log=$OUT/runs.txt
run() { # workload mode cmd... : per-iteration seconds
  local w=$1 m=$2; shift 2
  local t0=$(date +%s.%N)
  "$@" 2>>$OUT/stderr.txt | awk -v w="$w" -v m="$m" '/^\[iteration/ {sub("s,","",$3); print w, m, $2, $3}' | tee -a $log
  echo "# $w $m wall $(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{printf "%.2f", b-a}') s" | tee -a $log
}
declare -A CMD=(
  [gen1]="python3 examples/transformer_inference.py --iterations 3 --batch 1"
  [gen8]="python3 examples/transformer_inference.py --iterations 3 --batch 8"
  [loop]="python3 examples/launch_loop.py --iterations 3 --launches 20000"
)
# round 1: the three workloads; round 2: gen1 and loop again (more
# processes per mode for the overhead medians), while time allows
for rw in 1:gen1 1:loop 1:gen8 2:gen1 2:loop; do
  w=${rw#*:}
  # leave time for the summary (one GPT-2 round takes ~100 s)
  if [ $SECONDS -gt 400 ]; then echo "# round ${rw%%:*} $w skipped: $SECONDS s used" | tee -a $log; continue; fi
  c=${CMD[$w]}
  run $w untraced $c
  run $w default $T -q --force -o /tmp/$w.default.jsonl -- $c
  run $w sample $T -q --force --gpu-timestamps --gpu-sample 20/200 -o /tmp/$w.sample.jsonl -- $c
  run $w full $T -q --force --gpu-timestamps -o /tmp/$w.full.jsonl -- $c
  run $w untraced2 $c
  [ ${rw%%:*} = 1 ] || continue  # accuracy from round 1's traces
  python3 experiments/idle-accuracy/sample_offline.py /tmp/$w.full.jsonl /tmp/$w.offline.jsonl 20/200 | tee -a $OUT/offline.txt
  for m in sample full offline; do $T gaps /tmp/$w.$m.jsonl --json > /tmp/$w.$m.gaps.json 2>>$OUT/stderr.txt; done
done
python3 - $log /tmp <<'PY' | tee $OUT/summary.txt
import json, sys, statistics as st
from collections import defaultdict
t = defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith("#"): continue
    w, m, it, s = line.split(); t[(w, m)].append(float(s))
print("overhead: median seconds per iteration (3 iterations per process, all rounds), ratio to untraced; spread = untraced2/untraced")
for w in ["gen1", "loop", "gen8"]:
    base = st.median(t[(w, "untraced")]) if t[(w, "untraced")] else float("nan")
    row = [f"{m} {st.median(t[(w, m)]):.4f} ({st.median(t[(w, m)]) / base:.3f})" for m in
           ["untraced", "untraced2", "default", "sample", "full"] if t[(w, m)]]
    print(f"  {w}: " + ", ".join(row))
print("accuracy: phase generate (gpu 0): idle share, gap p50 / p90")
for w in ["gen1", "loop", "gen8"]:
    for m in ["full", "sample", "offline"]:
        try:
            r = json.load(open(f"{sys.argv[2]}/{w}.{m}.gaps.json"))
        except Exception as e:
            print(f"  {w} {m}: {e}"); continue
        sc = r["scopes"][0]
        ph = {p["phase"]: p["stats"] for p in sc["phases"]}
        for name, s in [("all", sc["overall"]), ("generate", ph.get("generate"))]:
            if s is None: continue
            sh = s["idle_share"]
            print(f"  {w:<5} {m:<8} {r['timeline']:<8} {name:<9} idle {100*sh:7.3f}%  p50 {s['p50_ns']/1e3:7.1f} us  p90 {s['p90_ns']/1e3:7.1f} us  gaps {s['count']}")
        cov = r["diagnostics"].get("coverage")
        if cov: print(f"        coverage: {cov['missing_launches']}/{cov['kernel_launches']} launches missing, {cov['missing_ns']}/{cov['kernel_ns']} ns")
PY
