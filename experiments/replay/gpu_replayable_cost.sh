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
#
# ROUNDS=N (N > 1) instead: N rounds of one process per mode of ROUND_MODES
# (default "untraced default replayable"; also nogpu, and replayable_old with
# TRACER_OLD=/path/to/another/tracer: its --replayable, e.g. the previous
# launch program), the order rotated per round; every traced run's cost by the
# model against the median of the untraced runs, each mode's median of points
# and the paired differences to the default per round (cost.md, via
# replayable_cost_model.py --rounds). BUDGET_S: no round starts that would end
# after it (by the previous round's length).
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
median_steady() { # the median of the untraced runs' steady times
    printf '%s\n' "${steadies[@]}" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
run() { # mode [tag]
    local m=$1 tag=${2:-$1} pre=() tr=$WORK/${2:-$1}.jsonl
    case $m in
    untraced) pre=() ;;
    default) pre=("$T" record -q --force --bpf-stats -o "$tr" --) ;;
    nogpu) pre=("$T" record -q --force --no-gpu --bpf-stats -o "$tr" --) ;;
    replayable) tr=$WORK/$tag.rec; pre=("$T" record -q --force --replayable -o "$tr" --) ;;
    replayable_old) tr=$WORK/$tag.rec; pre=("$TRACER_OLD" record -q --force --replayable -o "$tr" --) ;;
    esac
    timeout -k 5 240 ${pre[@]+"${pre[@]}"} "${cmd[@]}" >"$WORK/$tag.out" 2>"$WORK/$tag.err" </dev/null
    local rc=$? s
    s=$(awk '$1 == "STEADY_S" { print $2 }' "$WORK/$tag.out")
    say "$tag: rc $rc, steady ${s:-none} s"
    [ "$rc" != 0 ] && tail -n 5 "$WORK/$tag.err" | cut -c1-300 >>"$log"
    [ "$m" = untraced ] && [ -n "$s" ] && steadies+=("$s")
    # the traces of a round are analysed as they end, and deleted
    if [ "${ROUNDS:-1}" -gt 1 ] && [ "$m" != untraced ] && [ "$rc" = 0 ]; then
        local f=$tr
        python3 experiments/replay/replayable_cost_model.py --scan-only "$tag=$f" >>"$WORK/scans.jsonl" 2>>"$log"
        local tf=$f
        [ -d "$f" ] && tf=$(find "$f" -maxdepth 1 -name 'trace.jsonl*' | head -1)
        case $tf in *.zst) zstd -dc "$tf" | tail -n 1 ;; *) tail -n 1 "$tf" ;; esac | sed "s/^{/{\"run\":\"$tag\",/" >>"$OUT/footers.jsonl"
        rm -rf "$f"
    fi
}
if [ "${ROUNDS:-1}" -gt 1 ]; then
    read -r -a modes <<<"${ROUND_MODES:-untraced default replayable}"
    : >"$OUT/footers.jsonl"
    last=0
    for r in $(seq 1 "$ROUNDS"); do
        # no round that would end past BUDGET_S (by the previous round's length)
        if [ $((SECONDS + last)) -gt "${BUDGET_S:-100000}" ]; then
            say "round $r not started: ${SECONDS} s used, the last round took ${last} s, BUDGET_S=${BUDGET_S}"
            break
        fi
        r0=$SECONDS
        k=${#modes[@]}
        for i in $(seq 0 $((k - 1))); do
            m=${modes[$(((i + r - 1) % k))]}
            run "$m" "$m#$r"
        done
        last=$((SECONDS - r0))
    done
    med=$(median_steady)
    say "untraced steady times: ${steadies[*]} (median $med)"
    python3 experiments/replay/replayable_cost_model.py --untraced-s "$med" --rounds "$WORK/scans.jsonl" >"$OUT/cost.md" 2>>"$log"
    cat "$OUT/cost.md" >>"$log"
    say "done"
    exit 0
fi
run untraced
run default
run nogpu
[ "$UNTRACED" -ge 2 ] && run untraced
run replayable
for _ in $(seq 3 "$UNTRACED"); do run untraced; done
med=$(median_steady)
say "untraced steady times: ${steadies[*]} (median $med)"
python3 experiments/replay/replayable_cost_model.py --untraced-s "$med" default="$WORK/default.jsonl" \
    nogpu="$WORK/nogpu.jsonl" replayable="$WORK/replayable.rec" >"$OUT/cost.md" 2>>"$log"
cat "$OUT/cost.md" >>"$log"
for m in default nogpu; do tail -n 1 "$WORK/$m.jsonl"; done >"$OUT/footers.jsonl" 2>/dev/null
f=$(find "$WORK/replayable.rec" -maxdepth 1 -name 'trace.jsonl*' | head -1)
case $f in *.zst) zstd -dc "$f" | tail -n 1 ;; *) tail -n 1 "$f" ;; esac >>"$OUT/footers.jsonl" 2>/dev/null
say "done"
