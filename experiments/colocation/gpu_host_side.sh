#!/usr/bin/env bash
# Generation beside batch 8 (docs/colocation.md): where does the
# real generation lose its time together? Runs the real pair (pinned: gen on
# CPUs 2-3, batch 8 on 4-5) under `tracer record` with the recordings' flags
# (CUPTI, every probe, scheduler records), ROUNDS rounds, and prints
# experiments/colocation/sync_waits.py's three tables (synchronizations, GPU slices, the
# calling thread's on-CPU / runnable / stopped / blocked time per run) and,
# with --causes gen, who held the CPU when generation's calling thread was
# runnable. TRACER_CPUS: the CPUs the
# tracer itself runs on (default: each variant of "all 8-15", i.e. unpinned,
# then away from the workloads' CPUs); IOCTLS=1 adds --ioctls (every ioctl
# into the NVIDIA driver, with its duration). After the tables: the calling
# thread's blocked and stopped time per run by cause (system call and file),
# alone and together, and with IOCTLS=1 its NVIDIA ioctls per run by name.
# One device call (≤ 5 min):
#   OUT=$OUT bash experiments/colocation/gpu_host_side.sh
set -uo pipefail
ROOT=$(pwd)
T=$(realpath .device-bin/tracer)
OUT=${OUT:-/tmp/host-side-out}
ROUNDS=${ROUNDS:-8}
mkdir -p "$OUT"
{
echo "### CPU topology"
lscpu | grep -E "^(Model name|Thread|Core|Socket|NUMA node|CPU\(s\)|CPU MHz|CPU max)" || true
for c in 2 3 4 5; do echo "cpu$c siblings: $(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list 2>/dev/null)"; done
for where in ${TRACER_CPUS:-all 8-15}; do
    pin=(); [ "$where" = all ] || pin=(taskset -c "$where")
    rec=/tmp/host_$where.rec
    rm -rf "$rec"
    echo "### real gen+batch traced, tracer on CPUs: $where"
    io=(); [ "${IOCTLS:-0}" = 1 ] && io=(--ioctls)
    timeout 200 "${pin[@]}" "$T" record "${io[@]}" --replayable --capture-data --gpu-timestamps -q --force -o "$rec" -- \
        python3 "$ROOT/experiments/colocation/colocation_real.py" gen batch --rounds "$ROUNDS" --cpus 2,3 4,5 \
        --out "$OUT/real_traced_$where.json" 2>&1 | grep -v "resolved .* driver entry points"
    tr=$(ls "$rec"/trace.jsonl* | head -1)
    python3 "$ROOT/experiments/colocation/sync_waits.py" "$tr" --causes gen
done
} 2>&1 | tee "$OUT/host_side.log"
