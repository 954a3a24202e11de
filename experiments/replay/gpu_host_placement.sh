#!/usr/bin/env bash
# Does a host-bound GPU program's speed depend on the CPU it runs on? (issue 44,
# docs/replay.md *Where the rest goes*). One device call (as root, from the
# repo root; .device-bin/bins.tar.xz holding tracer):
#
#   OUT=$OUT bash experiments/replay/gpu_host_placement.sh
#
#  1. the machine: lscpu, NUMA nodes, the GPU's CPU and NUMA affinity (nvidia-smi topo -m);
#  2. `tracer calibrate-host` pinned to every CPU (the recording header's CPU workload);
#  3. PASSES passes over the CPUs (the second in reverse order): the untraced workload
#     (recorder_cost_reps.py KIND, REPS reps in one process) pinned to each CPU;
#  4. UNPINNED unpinned processes, each rep's end CPU logged;
#  5. the table: per CPU the calibration and the workload's median rep.
# Files in $OUT: placement_log.txt, placement.jsonl.
# Environment: KIND (mlp), ARGS (--steps 600), REPS (3), PASSES (2), UNPINNED (6), BUDGET_S (300).
set -u
ROOT=$(pwd)
. "$ROOT/experiments/replay/device_bins.sh"
OUT=${OUT:-/tmp/placement-out}
KIND=${KIND:-mlp}
ARGS=${ARGS:---steps 600}
REPS=${REPS:-3}
PASSES=${PASSES:-2}
UNPINNED=${UNPINNED:-6}
BUDGET_S=${BUDGET_S:-300}
P=$ROOT/experiments/replay/recorder_cost_reps.py
J=$OUT/placement.jsonl
mkdir -p "$OUT"
: > "$J"
t0=$(date +%s)
ncpu=$(nproc)
{
    lscpu | grep -E "Model name|Socket|NUMA|Thread|Core|MHz"
    nvidia-smi topo -m 2>&1 | head -8
    for ((c = 0; c < ncpu; c++)); do
        ns=$(taskset -c "$c" "$T" calibrate-host -o /tmp/cal.$c.json 2>&1 | grep -oE '[0-9]+ ns' | head -1)
        echo "{\"what\": \"calibration\", \"cpu\": $c, \"ns\": ${ns% ns}}" >> "$J"
        echo "calibration cpu $c: $ns"
    done
    for ((p = 1; p <= PASSES; p++)); do
        for ((i = 0; i < ncpu; i++)); do
            [ $(($(date +%s) - t0)) -ge "$BUDGET_S" ] && { echo "budget spent"; break 2; }
            c=$i
            [ $((p % 2)) = 0 ] && c=$((ncpu - 1 - i))
            # shellcheck disable=SC2086
            res=$(timeout 60 taskset -c "$c" python3 "$P" $KIND $ARGS --reps "$REPS" 2>/dev/null | tail -1)
            echo "{\"what\": \"pinned\", \"pass\": $p, \"cpu\": $c, \"result\": ${res:-null}}" >> "$J"
            echo "pass $p cpu $c: $res"
        done
    done
    for ((k = 1; k <= UNPINNED; k++)); do
        [ $(($(date +%s) - t0)) -ge $((BUDGET_S + 40)) ] && break
        # shellcheck disable=SC2086
        res=$(timeout 60 python3 "$P" $KIND $ARGS --reps "$REPS" 2>/dev/null | tail -1)
        echo "{\"what\": \"unpinned\", \"run\": $k, \"result\": ${res:-null}}" >> "$J"
        echo "unpinned $k: $res"
    done
    python3 - "$J" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cal = {r["cpu"]: r["ns"] for r in rows if r["what"] == "calibration"}
pin = {}
for r in rows:
    if r["what"] == "pinned" and r["result"]:
        pin.setdefault(r["cpu"], []).append(st.median(r["result"]["seconds"]) * 1e3)
print("| cpu | calibration µs | workload median rep ms (per pass) |")
print("|---|---|---|")
for c in sorted(set(cal) | set(pin)):
    print(f"| {c} | {cal.get(c, 0)/1e3:.0f} | {' / '.join(f'{x:.1f}' for x in pin.get(c, []))} |")
allp = [x for v in pin.values() for x in v]
if allp:
    print(f"pinned: median {st.median(allp):.1f} ms, min {min(allp):.1f}, max {max(allp):.1f}")
for r in rows:
    if r["what"] == "unpinned" and r["result"]:
        s = r["result"]
        print(f"unpinned {r['run']}: " + ", ".join(f"{x*1e3:.1f} ms on cpu {c}" for x, c in zip(s["seconds"], s.get("cpus", []))))
PY
} > "$OUT/placement_log.txt" 2>&1
tail -c 9000 "$OUT/placement_log.txt"
