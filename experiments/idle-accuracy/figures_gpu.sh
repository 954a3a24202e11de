#!/usr/bin/env bash
# NVML utilization beside the GPU-idle bound (docs/gaps.md) and what sampled
# CUPTI's lead-in keeps (docs/idle-accuracy.md), on the GPU machine (no Rust
# there; issue 30).
# Carry a folder with experiments/idle-accuracy/figures_gpu.sh, examples/{transformer_inference.py,
# launch_loop.py,tracer_markers.py} and target/release/{tracer,libtracer_cupti.so}
# (release build of this branch), run as root:
#   bash FOLDER/experiments/idle-accuracy/figures_gpu.sh        (outputs under $OUT, ~6 minutes)
# Per workload (GPT-2 generation at batch 1 and 8, the launch-bound loop):
#  1. one run with full --gpu-timestamps (NVML sampled every 10 ms, the default);
#  2. the bound check: `tracer compare` of it (the bound's certain idle time
#     against the measured idle time: "the lower bound holds"), and the same
#     trace with its gpu lines stripped: `tracer gaps --json --timeline bound`;
#  3. NVML utilization against CUPTI's busy share, per phase, from
#     `tracer report --json` of the measured trace (nvml_util_pct beside
#     1 - gpu_idle_share);
#  4. one run with --gpu-sample 20/200 (10 s lead-in, the default) and its
#     busy time per phase against the full run's (GPT-2: the loading phase's
#     copies were 35 % of the busy time lost without the lead-in).
set -u
cd "$(dirname "$0")/../.."
T=$PWD/target/release/tracer
OUT=${OUT:-/tmp/figures30}
mkdir -p "$OUT"
$T --help | grep -q -- 'LEAD_MS' || { echo "carried tracer lacks --gpu-sample .../LEAD_MS (not issue 30's build)"; exit 3; }
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/examples
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
declare -A CMD=(
  [gen1]="python3 examples/transformer_inference.py --iterations 3 --batch 1"
  [gen8]="python3 examples/transformer_inference.py --iterations 3 --batch 8"
  [loop]="python3 examples/launch_loop.py --iterations 3 --launches 20000"
)
for w in loop gen1 gen8; do
  c=${CMD[$w]}
  $T -q --force --gpu-timestamps -o $OUT/$w.full.jsonl -- $c > /dev/null 2>>$OUT/stderr.txt
  $T -q --force --gpu-timestamps --gpu-sample 20/200 -o $OUT/$w.sample.jsonl -- $c > /dev/null 2>>$OUT/stderr.txt
  $T compare $OUT/$w.full.jsonl > $OUT/$w.compare.txt 2>>$OUT/stderr.txt
  $T compare $OUT/$w.full.jsonl --json > $OUT/$w.compare.json 2>>$OUT/stderr.txt
  grep -v '"type":"gpu"' $OUT/$w.full.jsonl > $OUT/$w.nogpu.jsonl
  $T gaps $OUT/$w.nogpu.jsonl --json > $OUT/$w.nogpu.gaps.json 2>>$OUT/stderr.txt
  $T gaps $OUT/$w.full.jsonl --json > $OUT/$w.full.gaps.json 2>>$OUT/stderr.txt
  for m in full sample; do $T report $OUT/$w.$m.jsonl --json > $OUT/$w.$m.report.json 2>>$OUT/stderr.txt; done
done
python3 - "$OUT" <<'PY' | tee $OUT/summary.txt
import json, sys
out = sys.argv[1]
ld = lambda p: json.load(open(f"{out}/{p}"))
print("1. bound check: certain idle (gpu lines stripped) <= measured idle, per GPU and phase")
for w in ["loop", "gen1", "gen8"]:
    b, m = ld(f"{w}.nogpu.gaps.json"), ld(f"{w}.full.gaps.json")
    for sb in b["scopes"]:
        sm = next((s for s in m["scopes"] if s["scope"] == sb["scope"]), None)
        if not sm: continue
        ok = sb["overall"]["idle_ns"] <= sm["overall"]["idle_ns"]
        print(f"  {w} {sb['scope']}: bound >= {sb['overall']['idle_ns']/1e6:.2f} ms, measured {sm['overall']['idle_ns']/1e6:.2f} ms: {'holds' if ok else 'VIOLATED'}")
        for pb in sb["phases"]:
            pm = next((p for p in sm["phases"] if p["phase"] == pb["phase"]), None)
            if pm and pb["stats"]["idle_ns"] > pm["stats"]["idle_ns"]:
                print(f"    VIOLATED in phase {pb['phase']}: {pb['stats']['idle_ns']} > {pm['stats']['idle_ns']}")
    for c in ld(f"{w}.compare.json")["bound"]:
        print(f"  {w} compare, bound: flagged {c['flagged']} (idle share >= {100*c['inferred_idle_share']:.1f}% vs {100*c['measured_idle_share']:.1f}% measured)")
print("2. NVML utilization vs CUPTI busy share (measured), per phase of the main process")
for w in ["loop", "gen1", "gen8"]:
    r = ld(f"{w}.full.report.json")
    for p in r["phases"]:
        busy = None if p["gpu_idle_share"] is None else 100 * (1 - p["gpu_idle_share"])
        u = p.get("nvml_util_pct")
        print(f"  {w} {p['name']:<10} {p['dur_ns']/1e9:8.3f} s  CUPTI busy {busy if busy is None else round(busy, 1)} %  NVML {u if u is None else round(u, 1)} %")
print("3. sampled (20/200, 10 s lead-in) vs full: busy time per phase")
for w in ["loop", "gen1", "gen8"]:
    f, s = ld(f"{w}.full.report.json"), ld(f"{w}.sample.report.json")
    for pf in f["phases"]:
        ps = next((p for p in s["phases"] if p["name"] == pf["name"]), None)
        if not ps or pf["gpu_busy_ns"] in (None, 0) or ps["gpu_busy_ns"] is None: continue
        print(f"  {w} {pf['name']:<10} full {pf['gpu_busy_ns']/1e6:9.2f} ms  sampled {ps['gpu_busy_ns']/1e6:9.2f} ms  ({100*(ps['gpu_busy_ns']/pf['gpu_busy_ns']-1):+.1f} %)")
PY
