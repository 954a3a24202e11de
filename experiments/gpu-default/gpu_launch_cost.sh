#!/usr/bin/env bash
# What each recording mode costs per kernel launch and per launch +
# synchronization, timed inside the process (launch_cost.cu), and what an
# injection library costs by itself (issue 43: the default recording's
# standing cost while CUPTI is detached; issue 44: --replayable against the
# default). One device call (kind nvidia-h200, as root, from the repository
# root; nvcc on the PATH or in /usr/local/cuda/bin):
#
#   ROUNDS=12 BUDGET_S=300 OUT=$OUT bash experiments/gpu-default/gpu_launch_cost.sh
#
# Binaries: .device-bin/bins.tar.xz (tracer, replay, libtracer_cupti.so) or TRACER.
#
# Modes (MODES, default all), one process each, interleaved (the order rotated
# per round), unpinned:
#   untraced     the program alone
#   noop_inject  the program alone with CUDA_INJECTION64_PATH naming a library
#                whose InitializeInjection does nothing: what the driver does
#                for a process with an injection library, CUPTI never loaded
#   nogpu        tracer record --no-gpu (the pure-uprobe mode)
#   default      tracer record (adaptive CUPTI windows + the durations library)
#   standing     tracer record --gpu-windows 100/100/3600000/0.01: one window
#                at cuInit (closed at a launch's return about 100 ms later,
#                CUPTI finalized), then none: the injection's standing cost
#   replayable   tracer record --replayable
#   full         tracer record --gpu-timestamps
# Each traced mode has its own durations library. Then one
# `--no-gpu --bpf-stats` run for the per-program costs.
#
# Files in $OUT: runs.csv (mode,round,launch_ns,launch_p10_ns,sync_step_ns,
# sync_step_p10_ns,steady_s,wall_s,rc,pos) and log.txt (versions, every run,
# the footers of each mode's last run, the table of launch_cost_table.py).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here" || exit 2
D=$here/experiments/gpu-default
OUT=${OUT:-/tmp/gpu-launch-cost-out}
MODES=${MODES:-untraced noop_inject nogpu default standing replayable full}
ROUNDS=${ROUNDS:-12}
BUDGET_S=${BUDGET_S:-300}
ARGS=${ARGS:-200 1000 0.6 10000}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/gpu-launch-cost.XXXXXX)
mkdir -p "$WORK/bin" "$WORK/lib" "$WORK/foot"
log=$OUT/log.txt
csv=$OUT/runs.csv
SECONDS=0
say() { echo "[$(date +%T) +${SECONDS}s] $*" | tee -a "$log"; }
: >"$log"
echo "mode,round,launch_ns,launch_p10_ns,sync_step_ns,sync_step_p10_ns,steady_s,wall_s,rc,pos" >"$csv"

. "$D/tracer_bin.sh"
find_tracer

NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$NVCC" -O2 -o "$WORK/launch_cost" "$D/launch_cost.cu" >>"$log" 2>&1 || { say "nvcc failed"; exit 4; }
printf 'int InitializeInjection(void) { return 1; }\n' >"$WORK/noop.c"
cc -shared -fPIC -o "$WORK/noop.so" "$WORK/noop.c" >>"$log" 2>&1 || { say "cc failed"; exit 4; }
{
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
    echo "cores: $(nproc); kernel: $(uname -r); nvcc: $("$NVCC" --version | tail -1)"
    "$T" --version
} >>"$log" 2>&1
say "MODES=$MODES ROUNDS=$ROUNDS BUDGET_S=$BUDGET_S ARGS=$ARGS work=$WORK"
read -r -a args <<<"$ARGS"

run_one() { # mode round pos [extra tracer flags...]
    local m=$1 r=$2 pos=$3
    shift 3
    local tr=$WORK/$m.r$r.jsonl so=$WORK/$m.r$r.out se=$WORK/$m.r$r.err
    local -a pre=() env=()
    mkdir -p "$WORK/lib/$m"
    env=(TRACER_DURATIONS_LIBRARY="$WORK/lib/$m/durations")
    case $m in
    untraced) env=() ;;
    noop_inject) env=(CUDA_INJECTION64_PATH="$WORK/noop.so") ;;
    nogpu) pre=("$T" record -q --force --no-gpu -o "$tr" --) ;;
    default) pre=("$T" record -q --force -o "$tr" --) ;;
    standing) pre=("$T" record -q --force --gpu-windows 100/100/3600000/0.01 -o "$tr" --) ;;
    replayable) tr=$WORK/$m.r$r.rec; pre=("$T" record -q --force --replayable -o "$tr" --) ;;
    full) pre=("$T" record -q --force --gpu-timestamps -o "$tr" --) ;;
    stats) pre=("$T" record -q --force --no-gpu --bpf-stats -o "$tr" --) ;;
    *) say "unknown mode $m"; return ;;
    esac
    local t0 t1 rc
    t0=$(date +%s.%N)
    env ${env[@]+"${env[@]}"} timeout -k 5 60 ${pre[@]+"${pre[@]}"} "$WORK/launch_cost" "${args[@]}" >"$so" 2>"$se" </dev/null
    rc=$?
    t1=$(date +%s.%N)
    local l s st
    l=$(awk '$1 == "LAUNCH_NS" { print $2 "," $3 }' "$so")
    s=$(awk '$1 == "SYNC_STEP_NS" { print $2 "," $3 }' "$so")
    st=$(awk '$1 == "STEADY_S" { print $2 }' "$so")
    echo "$m,$r,${l:-,},${s:-,},$st,$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'),$rc,$pos" >>"$csv"
    echo "  r$r $m: launch ${l:-none} ns, step ${s:-none} ns, rc $rc" >>"$log"
    [ "$rc" != 0 ] && { echo "  --- stderr:"; tail -n 6 "$se" | cut -c1-300; } >>"$log"
    # the footer of the mode's last run (a trace's last line; a recording's trace inside it)
    local f=$tr
    [ -d "$tr" ] && f=$(find "$tr" -maxdepth 1 -name 'trace.jsonl*' | head -1)
    if [ -n "$f" ] && [ -f "$f" ]; then
        case $f in
        *.zst) zstd -dc "$f" 2>/dev/null | tail -n 1 >"$WORK/foot/$m.json" ;;
        *) tail -n 1 "$f" >"$WORK/foot/$m.json" ;;
        esac
    fi
    rm -rf "$tr"
}

read -r -a modes <<<"$MODES"
n=${#modes[@]}
say "warm-up: one run per traced mode (fills its durations library)"
for m in "${modes[@]}"; do
    [ "$m" = untraced ] || [ "$m" = noop_inject ] || run_one "$m" 0 0
done
for r in $(seq 1 "$ROUNDS"); do
    if [ "$SECONDS" -ge "$BUDGET_S" ]; then
        say "round $r not started: ${SECONDS}s >= BUDGET_S"
        break
    fi
    for i in $(seq 0 $((n - 1))); do
        run_one "${modes[$(((i + r - 1) % n))]}" "$r" "$i"
    done
    say "round $r done"
done
run_one stats 0 0
for f in "$WORK"/foot/*.json; do
    echo "--- footer of $(basename "$f" .json)'s last run:" >>"$log"
    cat "$f" >>"$log"
done
python3 "$D/launch_cost_table.py" "$csv" | tee -a "$log"
say "done"
