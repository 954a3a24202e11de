#!/usr/bin/env bash
# What a CUPTI window costs the program, inside one process (issue 43), against
# the budget's estimate (`gpu_timestamps.window_cost_ns`: attach and detach as
# timed, RECORD_COST_NS per record). window_cost.cu times every batch of its
# launch, graph and sync phases back to back; under forced windows the batches
# inside and around each window show its cost (window_cost_table.py). One
# device call (kind nvidia-h200, as root, from the repository root):
#
#   ROUNDS=4 OUT=$OUT bash experiments/gpu-default/window_cost.sh
#
# Modes, one process each, interleaved (the order rotated per round), unpinned:
#   nogpu    tracer record --no-gpu (no windows: the batches' own spread)
#   forced   tracer record --gpu-windows $FORCED (default 100/100/400/0: a
#            100 ms window about every 500 ms, no budget)
#   default  tracer record (the default's own windows; the library filled by
#            a first default run)
# Environment: ROUNDS (4), MODES, FORCED, ARGS (window_cost.cu's PHASE_S
# WARM_S NODES: "4 0.6 20"), BUDGET_S (240: no round starts past it).
# Binaries: .device-bin/bins.tar.xz (tracer, replay, libtracer_cupti.so) or TRACER.
# Files in $OUT: table.md (window_cost_table.py), log.txt, runs.tgz (per run:
# batches.txt, windows.jsonl (the gpu_window lines), footer.json, stdout).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here" || exit 2
D=$here/experiments/gpu-default
OUT=${OUT:-/tmp/window-cost-out}
MODES=${MODES:-nogpu forced default}
FORCED=${FORCED:-100/100/400/0}
ROUNDS=${ROUNDS:-4}
BUDGET_S=${BUDGET_S:-240}
ARGS=${ARGS:-4 0.6 20}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/window-cost.XXXXXX)
mkdir -p "$WORK/runs" "$WORK/lib"
log=$OUT/log.txt
SECONDS=0
say() { echo "[$(date +%T) +${SECONDS}s] $*" | tee -a "$log"; }
: >"$log"

. "$D/tracer_bin.sh"
find_tracer

NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$NVCC" -O2 -o "$WORK/window_cost" "$D/window_cost.cu" >>"$log" 2>&1 || { say "nvcc failed"; exit 4; }
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    echo "cores: $(nproc); kernel: $(uname -r)"
    "$T" --version
} >>"$log" 2>&1
say "MODES=$MODES FORCED=$FORCED ROUNDS=$ROUNDS ARGS=$ARGS work=$WORK"
read -r -a args <<<"$ARGS"

run_one() { # mode round
    local m=$1 r=$2
    local d=$WORK/runs/$m.r$r
    mkdir -p "$d"
    local tr=$WORK/trace.jsonl
    local -a pre
    case $m in
    nogpu) pre=("$T" record -q --force --no-gpu -o "$tr" --) ;;
    forced) pre=("$T" record -q --force --gpu-windows "$FORCED" -o "$tr" --) ;;
    default) pre=("$T" record -q --force -o "$tr" --) ;;
    *) say "unknown mode $m"; return ;;
    esac
    TRACER_DURATIONS_LIBRARY=$WORK/lib/durations timeout -k 5 90 "${pre[@]}" "$WORK/window_cost" "$d/batches.txt" "${args[@]}" \
        >"$d/stdout" 2>"$d/stderr" </dev/null
    local rc=$?
    grep -F '"type":"gpu_window"' "$tr" >"$d/windows.jsonl" 2>/dev/null
    tail -n 1 "$tr" >"$d/footer.json" 2>/dev/null
    rm -f "$tr"
    echo "  r$r $m: rc $rc, $(grep -c . "$d/windows.jsonl") windows, $(awk '$1 == "STEADY_S" { print $2 }' "$d/stdout") s" >>"$log"
    [ "$rc" != 0 ] && tail -n 5 "$d/stderr" >>"$log"
}

read -r -a modes <<<"$MODES"
n=${#modes[@]}
say "warm-up: one default run (fills the durations library)"
run_one default 0
for r in $(seq 1 "$ROUNDS"); do
    if [ "$SECONDS" -ge "$BUDGET_S" ]; then
        say "round $r not started: ${SECONDS}s >= BUDGET_S"
        break
    fi
    for i in $(seq 0 $((n - 1))); do
        run_one "${modes[$(((i + r - 1) % n))]}" "$r"
    done
    say "round $r done"
done
python3 "$D/window_cost_table.py" "$WORK/runs" >"$OUT/table.md" 2>>"$log"
tail -n 40 "$OUT/table.md" >>"$log"
tar -C "$WORK" -czf "$OUT/runs.tgz" runs
say "done"
