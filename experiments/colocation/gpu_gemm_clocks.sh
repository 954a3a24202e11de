#!/usr/bin/env bash
# Why the co-location runs' fp16 matrix products run ~7 % slower in their
# recording and its replay (0.69-0.72 s a phase) than in the real harness's
# served phases (0.64-0.68 s), on the same H100. This samples the GPU's clocks,
# power and throttle reasons (nvidia-smi, 50 ms) while (1) the workload runs
# its phase six times in one process, right after its warm-up and then with
# 0.3 s of idle before each, untraced; (2) the same under tracer record as the
# co-location recordings are made; (3) replay of that recording, six passes,
# with and without CUPTI. One device call (≤ 3 min, .device-bin carried):
#   OUT=$OUT bash experiments/colocation/gpu_gemm_clocks.sh
set -uo pipefail
T=$(realpath .device-bin/tracer)
R=$(realpath .device-bin/replay)
OUT=${OUT:-/tmp/gemm-clocks-out}
mkdir -p "$OUT"
REC=/tmp/gc_gemm.rec
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv,noheader -lms 50 > "$OUT/clocks.csv" 2>&1 &
SMI=$!
mark() { echo "MARK $(date +%s.%N) $*"; }
{
mark "phases untraced"
timeout 90 python3 - <<'PY'
import sys, time
sys.argv = ["colocation_workloads.py", "gemm"]
sys.path.insert(0, "experiments/colocation")
import colocation_workloads as w
step = w.build(w.parse(["gemm"]))
step()  # warm-up
for k in range(6):
    if k >= 3:
        time.sleep(0.3)
    t = time.perf_counter(); t0 = time.time()
    step()
    print(f"{t0:.3f} phase {k + 1}{' after 0.3 s idle' if k >= 3 else ' back to back'}: {time.perf_counter() - t:.3f} s", flush=True)
PY
mark "record"
rm -rf "$REC"
timeout 60 "$T" record --replayable --capture-data --gpu-timestamps -q --force -o "$REC" -- python3 experiments/colocation/colocation_workloads.py gemm
mark "replay (CUPTI)"
timeout 90 "$R" "$REC" --mode sequence --iterations 6 --warmup 1 --report "$OUT/gemm_replay.json" 2>&1 | grep -E "mode |CUPTI:|generate|warmup|identical|differ" | head -12
mark "replay (no CUPTI)"
timeout 90 "$R" "$REC" --mode sequence --iterations 6 --warmup 1 --no-cupti --report "$OUT/gemm_replay_nocupti.json" 2>&1 | grep -E "mode |identical|differ" | head -6
mark "end"
} 2>&1 | tee "$OUT/gemm_clocks.log"
kill $SMI
python3 - "$OUT/clocks.csv" "$OUT/gemm_clocks.log" <<'PY'
import statistics, sys
sys.path.insert(0, "experiments/colocation")
import smi_csv
rows = []
for t, p in smi_csv.samples(sys.argv[1]):
    try:
        rows.append((t, int(smi_csv.number(p[0])), int(smi_csv.number(p[1])), smi_csv.number(p[2]), int(p[3]), p[4]))
    except (ValueError, IndexError):
        pass
marks = smi_csv.marks(sys.argv[2])
phases = []
for l in open(sys.argv[2]):
    f = l.split()
    if len(f) > 3 and f[1] == "phase":
        phases.append((float(f[0]), float(f[0]) + float(f[-2]), " ".join(f[1:])))
print("window: samples above 300 W; SM clock median (min-max) MHz; power median W; throttle reasons seen")
for (a, name), (b, _) in list(zip(marks, marks[1:])) + [((p[0], p[2]), (p[1], "")) for p in phases]:
    s = [r for r in rows if a <= r[0] < b and r[3] > 300]
    if s:
        th = sorted({r[5] for r in s})
        print(f"{name:40s} n={len(s):4d} SM {statistics.median(r[1] for r in s):.0f} ({min(r[1] for r in s)}-{max(r[1] for r in s)}) "
              f"mem {statistics.median(r[2] for r in s):.0f}  {statistics.median(r[3] for r in s):.0f} W  {th}")
PY
