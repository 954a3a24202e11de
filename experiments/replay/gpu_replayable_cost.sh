#!/usr/bin/env bash
# Issue 44: what `--replayable` costs GPT-2 generation's timed part against
# the default, by the per-call cost model (replayable_cost_model.py: the
# recordings' own bpf_stats and trap costs over the steady phase's probed
# calls), beside the untraced steady times. One device call (kind
# nvidia-h200, as root, from the repository root):
#
#   UNTRACED=3 OUT=$OUT bash experiments/replay/gpu_replayable_cost.sh
#
# Runs, in this order: untraced, `tracer record --bpf-stats` (default),
# `--no-gpu --bpf-stats`, `--replayable` (statistics implied), untraced again
# ... (UNTRACED untraced runs in all, spread between the traced ones).
# GPT2_ARGS (default "--new-tokens 64 --iterations 3") sets the workload.
# Files in $OUT: log.txt (every run, the table), cost.md (the table), footers.jsonl.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here" || exit 2
OUT=${OUT:-/tmp/gpu-replayable-cost}
UNTRACED=${UNTRACED:-3}
GPT2_ARGS=${GPT2_ARGS:---new-tokens 64 --iterations 3}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/gpu-replayable-cost.XXXXXX)
mkdir -p "$WORK/bin" "$WORK/lib"
log=$OUT/log.txt
: >"$log"
SECONDS=0
say() { echo "[$(date +%T) +${SECONDS}s] $*" | tee -a "$log"; }
. "$here/experiments/gpu-default/tracer_bin.sh"
find_tracer
"$T" --version >>"$log" 2>&1
read -r -a gargs <<<"$GPT2_ARGS"
cmd=(python3 experiments/gpu-default/torch_workloads.py gpt2 "${gargs[@]}")
say "workload: ${cmd[*]}"
export PYTHONUNBUFFERED=1 TRACER_DURATIONS_LIBRARY=$WORK/lib/durations
steadies=()
run() { # mode
    local m=$1 pre=() tr=$WORK/$1.jsonl
    case $m in
    untraced) pre=() ;;
    default) pre=("$T" record -q --force --bpf-stats -o "$tr" --) ;;
    nogpu) pre=("$T" record -q --force --no-gpu --bpf-stats -o "$tr" --) ;;
    replayable) tr=$WORK/$m.rec; pre=("$T" record -q --force --replayable -o "$tr" --) ;;
    esac
    timeout -k 5 240 ${pre[@]+"${pre[@]}"} "${cmd[@]}" >"$WORK/$m.out" 2>"$WORK/$m.err" </dev/null
    local rc=$? s
    s=$(awk '$1 == "STEADY_S" { print $2 }' "$WORK/$m.out")
    say "$m: rc $rc, steady ${s:-none} s"
    [ "$rc" != 0 ] && tail -n 5 "$WORK/$m.err" | cut -c1-300 >>"$log"
    [ "$m" = untraced ] && [ -n "$s" ] && steadies+=("$s")
}
run untraced
run default
run nogpu
[ "$UNTRACED" -ge 2 ] && run untraced
run replayable
for _ in $(seq 3 "$UNTRACED"); do run untraced; done
med=$(printf '%s\n' "${steadies[@]}" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
say "untraced steady times: ${steadies[*]} (median $med)"
python3 experiments/replay/replayable_cost_model.py --untraced-s "$med" default="$WORK/default.jsonl" \
    nogpu="$WORK/nogpu.jsonl" replayable="$WORK/replayable.rec" >"$OUT/cost.md" 2>>"$log"
cat "$OUT/cost.md" >>"$log"
for m in default nogpu; do tail -n 1 "$WORK/$m.jsonl"; done >"$OUT/footers.jsonl" 2>/dev/null
f=$(find "$WORK/replayable.rec" -maxdepth 1 -name 'trace.jsonl*' | head -1)
case $f in *.zst) zstd -dc "$f" | tail -n 1 ;; *) tail -n 1 "$f" ;; esac >>"$OUT/footers.jsonl" 2>/dev/null
say "done"
