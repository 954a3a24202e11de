#!/usr/bin/env bash
# Co-location: replayed-together slowdowns against the real ones (issue 34)
# (docs/colocation.md). One device call (kind nvidia-h100-x1, as root, from
# the repo root, with .device-bin/{tracer,replay,libtracer_cupti.so} carried:
# `cargo xtask build --release` and `cargo build --release -p replay` (the xtask builds no replay) here, then copy them), under 9 minutes:
#
#   bash experiments/colocation/gpu_colocation.sh
#
#  1. records four workloads of experiments/colocation/colocation_workloads.py with
#     --replayable --capture-data --gpu-timestamps: GPT-2 generation batch 1
#     (gen), GPT-2 forwards at batch 8 (batch), a fp16 matmul loop (gemm),
#     the launch loop of examples/launch_loop.py (launch); each marks its
#     measured phase `generate`;
#  2. per pair (gen+batch, launch+gen, batch+gemm): the real workloads alone
#     and together, interleaved over ROUNDS rounds (colocation_real.py: each
#     workload set up once, go files as the start barrier), then
#     `replay A.rec B.rec --together --rounds ROUNDS` on their recordings
#     (CUPTI busy/idle, NVML energy, outputs bit for bit);
#  3. the table: pair, tenant, real slowdown (alone spread), replayed
#     slowdown (alone spread), predicted slowdown, errors against the real.
#
# Everything lands in $OUT: log_colocation.txt, colocation_table.txt,
# results.tgz (real_PAIR.json, real_traced_PAIR.json, together_PAIR.json =
# replay's report, plan_PAIR.txt), traces.tar.partNN (each recording's
# manifest.json and trace.jsonl.zst; the images stay behind: plan_PAIR.txt
# holds each pair's plan and prediction). A failed step is logged and the others go on; the
# table is printed last.
# Environment: PAIRS (default "gen+batch launch+gen batch+gemm"), ROUNDS
# (default 6), BUDGET_S (default 520: the seconds after which no new step
# starts), REAL_CAP/REPLAY_CAP (seconds a real/replayed pair may take), REAL
# (default "untraced cupti traced"): the real harness untraced (what tracing
# itself changes); "cupti", under `tracer record --gpu-timestamps` (CUPTI and
# every probe in both workloads, as in the recordings, without
# --capture-data's stops, which the replay leaves out of its pacing: the
# like-for-like ground truth); "traced", under `tracer record --replayable
# --capture-data --gpu-timestamps` as the recordings were made (its stops
# show what the data capture costs a together run); REPLAY_RERUN=1 replays
# each pair a second time with --rerun-before-phase (together_rerun_PAIR.json);
# HOST_MATCH=untraced|cupti replays each pair once more at the host speed of
# that kind's real alone runs (--host-alone-ms, their medians from
# experiments/colocation/host_match.py: together_matched_PAIR.json and its table).
# After each traced real pair, experiments/colocation/sync_waits.py reads its trace
# (sync_waits_HOW_PAIR.txt in results.tgz): synchronizations and GPU slices per run;
# and on the replayed runs' activities (replay --activities;
# sync_waits_replayed_PAIR.txt): the same slices, replayed.
set -u
ROOT=$(pwd)
T=$(realpath .device-bin/tracer)
R=$(realpath .device-bin/replay)
OUT=${OUT:-/tmp/coloc-out}
ROUNDS=${ROUNDS:-6}
BUDGET_S=${BUDGET_S:-520}
# Which pairs (a+b, space-separated), in this order.
PAIRS=${PAIRS:-gen+batch launch+gen batch+gemm}
# The real runs: untraced, cupti (under tracer with CUPTI, no data capture), traced (the recordings' flags).
REAL=${REAL:-untraced cupti traced}
REAL_CAP=${REAL_CAP:-110}
REPLAY_CAP=${REPLAY_CAP:-150}
# PIN=1: each workload on its own two CPUs (recorded on 2-3; real: the first
# workload on 2-3, the second on 4-5; replay and its tenants on 2-5).
PIN_REC=() PIN_REAL=() PIN_REPLAY=()
if [ "${PIN:-0}" = 1 ]; then
    PIN_REC=(taskset -c 2-3) PIN_REAL=(--cpus 2,3 4,5) PIN_REPLAY=(taskset -c 2-5)
fi
W=/tmp/coloc
RES=$W/results
rm -rf "$W"
mkdir -p "$OUT" "$W" "$RES"
log=$OUT/log_colocation.txt
PY=python3
if ! python3 -c "import torch" 2>/dev/null && [ -x /opt/torch/.venv/bin/python3 ]; then
    PY=/opt/torch/.venv/bin/python3
fi
WL="$ROOT/experiments/colocation/colocation_workloads.py"

# Seconds a step may take: at most $1, at most what is left of the budget (0: skip it).
allow() {
    local left=$((BUDGET_S - SECONDS))
    if [ "$left" -lt 20 ]; then echo 0; elif [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}

# step NAME CAP_S COMMAND...: logs, times out, never stops the script.
step() {
    local name=$1 cap=$2
    shift 2
    local t
    t=$(allow "$cap")
    if [ "$t" -eq 0 ]; then
        echo "### $name: skipped (${SECONDS} s of ${BUDGET_S} s used)"
        return 1
    fi
    echo "### $name (at ${SECONDS} s, limit ${t} s): $*"
    local t0=$SECONDS
    timeout -k 5 "$t" "$@"
    local rc=$?
    echo "### $name: exit $rc after $((SECONDS - t0)) s"
    return $rc
}

record() { # $1: kind
    rm -rf "$W/$1.rec"
    # --bpf-stats: the kernel times each eBPF program, so the recorder's own time in the
    # workload's thread (parameter capture included) is measured, not guessed
    step "record $1" 100 "$T" record --replayable --capture-data --gpu-timestamps --bpf-stats -q --force -o "$W/$1.rec" -- \
        "${PIN_REC[@]}" "$PY" "$WL" "$1"
    if [ -f "$W/$1.rec/manifest.json" ]; then
        tail -n 1 "$W/$1.rec/trace.jsonl" | "$PY" -c '
import json, sys
s = json.load(sys.stdin).get("bpf_stats") or {}
print("  %s: eBPF programs (--bpf-stats): %s; %.1f ms in all" % (sys.argv[1], ", ".join(
    "%s %d runs x %.0f ns" % (k, v["runs"], v["ns_per_run"]) for k, v in sorted(s.items())),
    sum(v["run_time_ns"] for v in s.values()) / 1e6))' "$1"
        mkdir -p "$W/traces/$1.rec"
        cp "$W/$1.rec/manifest.json" "$W/traces/$1.rec/"
        if command -v zstd > /dev/null; then
            zstd -q -19 -T0 "$W/$1.rec/trace.jsonl" -o "$W/traces/$1.rec/trace.jsonl.zst"
        else
            gzip -9 -c "$W/$1.rec/trace.jsonl" > "$W/traces/$1.rec/trace.jsonl.gz"
        fi
        "$R" plan "$W/$1.rec" 2>&1 | grep -E "^(plan|launches|copies)" | sed "s/^/  $1: /"
    fi
}

pair() { # $1 $2: kinds
    local p="$1+$2"
    local how
    for how in $REAL; do
        local traced=() name="real_$p"
        if [ "$how" = traced ]; then
            # the same instrumentation as the recordings: CUPTI in both workloads, every call probed
            name="real_traced_$p"
            rm -rf "$W/$name.rec"
            traced=("$T" record --replayable --capture-data --gpu-timestamps -q --force -o "$W/$name.rec" --)
        elif [ "$how" = cupti ]; then
            # CUPTI and every probe, without the data capture's stops (replay leaves those out of its pacing)
            name="real_cupti_$p"
            rm -rf "$W/$name.rec"
            mkdir -p "$W/$name.rec"
            traced=("$T" record --gpu-timestamps -q --force -o "$W/$name.rec/trace.jsonl" --)
        fi
        step "$name" "$REAL_CAP" "${traced[@]}" "$PY" "$ROOT/experiments/colocation/colocation_real.py" "$1" "$2" --rounds "$ROUNDS" \
            "${PIN_REAL[@]}" --out "$RES/$name.json"
        if [ "$how" != untraced ] && [ -d "$W/$name.rec" ]; then
            # where each workload waits, alone and together, and how often it loses the GPU
            "$PY" "$ROOT/experiments/colocation/sync_waits.py" "$(ls "$W/$name.rec"/trace.jsonl* | head -1)" | tee "$RES/sync_waits_${how}_$p.txt"
        fi
    done
    if [ -d "$W/$1.rec" ] && [ -d "$W/$2.rec" ]; then
        "$R" plan "$W/$1.rec" "$W/$2.rec" --together --rounds "$ROUNDS" > "$RES/plan_$p.txt" 2>&1
        cat "$RES/plan_$p.txt"
        step "replay $p" "$REPLAY_CAP" "${PIN_REPLAY[@]}" "$R" "$W/$1.rec" "$W/$2.rec" --together --rounds "$ROUNDS" \
            --report "$RES/together_$p.json" --activities "$W/activities_$p.jsonl"
        if [ -s "$W/activities_$p.jsonl" ]; then
            echo "### the replayed runs' GPU slices (sync_waits.py on --activities)"
            "$PY" "$ROOT/experiments/colocation/sync_waits.py" "$W/activities_$p.jsonl" | tee "$RES/sync_waits_replayed_$p.txt"
        fi
        # HOST_MATCH=untraced|cupti: the pair replayed once more with each tenant's host gaps
        # scaled so that it takes as long alone as that kind's real alone runs did (their median,
        # experiments/colocation/host_match.py; the together runs are not read): together_matched_PAIR.json
        if [ -n "${HOST_MATCH:-}" ]; then
            local rj=$RES/real_$p.json
            [ "$HOST_MATCH" = untraced ] || rj=$RES/real_${HOST_MATCH}_$p.json
            local ms
            if ms=$("$PY" "$ROOT/experiments/colocation/host_match.py" "$rj"); then
                echo "### the $HOST_MATCH real runs alone (median ms): --host-alone-ms $ms"
                step "replay $p --host-alone-ms $ms" "$REPLAY_CAP" "${PIN_REPLAY[@]}" "$R" "$W/$1.rec" "$W/$2.rec" \
                    --together --rounds "$ROUNDS" --host-alone-ms "$ms" --report "$RES/together_matched_$p.json"
            fi
        fi
        if [ "${REPLAY_RERUN:-0}" = 1 ]; then
            step "replay $p --rerun-before-phase" "$REPLAY_CAP" "$R" "$W/$1.rec" "$W/$2.rec" --together --rounds "$ROUNDS" \
                --rerun-before-phase --report "$RES/together_rerun_$p.json"
        fi
    else
        echo "### replay $p: skipped (a recording is missing)"
    fi
}

{
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode --format=csv
    echo "python: $PY; rounds: $ROUNDS; budget: $BUDGET_S s"
    echo "## 1. recordings"
    for k in $(echo "$PAIRS" | tr '+ ' '\n\n' | sort -u); do record "$k"; done
    echo "## 2. pairs: real, then replayed"
    for p in $PAIRS; do pair "${p%+*}" "${p#*+}"; done
    echo "## 3. table (after ${SECONDS} s)"
} > "$log" 2>&1

args=()
for p in $PAIRS; do args+=(--pair "$p" "$RES/real_$p.json" "$RES/together_$p.json"); done
targs=() cargs=()
for p in $PAIRS; do targs+=(--pair "$p" "$RES/real_traced_$p.json" "$RES/together_$p.json"); done
for p in $PAIRS; do cargs+=(--pair "$p" "$RES/real_cupti_$p.json" "$RES/together_$p.json"); done
{
    case " $REAL " in *" untraced "*)
        echo "## real runs untraced"
        "$PY" "$ROOT/experiments/colocation/colocation_table.py" "${args[@]}";;
    esac
    case " $REAL " in *" cupti "*)
        echo "## real runs with CUPTI (tracer record --gpu-timestamps: every probe, no data capture)"
        "$PY" "$ROOT/experiments/colocation/colocation_table.py" "${cargs[@]}";;
    esac
    if [ -n "${HOST_MATCH:-}" ]; then
        margs=()
        for p in $PAIRS; do
            rj=$RES/real_$p.json
            [ "$HOST_MATCH" = untraced ] || rj=$RES/real_${HOST_MATCH}_$p.json
            margs+=(--pair "$p" "$rj" "$RES/together_matched_$p.json")
        done
        echo "## replayed at the host speed of the $HOST_MATCH real alone runs (--host-alone-ms), against those real runs"
        "$PY" "$ROOT/experiments/colocation/colocation_table.py" "${margs[@]}"
    fi
    case " $REAL " in *" traced "*)
        echo "## real runs traced (tracer record --replayable --capture-data --gpu-timestamps, as the recordings)"
        "$PY" "$ROOT/experiments/colocation/colocation_table.py" "${targs[@]}";;
    esac
} > "$OUT/colocation_table.txt" 2>> "$log"
# What comes back (the device returns at most 8 files): the log, the table,
# the JSON results and plans, the recordings' traces (zstd, manifests) in parts of 15 MB.
(cd "$RES" && tar -czf "$OUT/results.tgz" .)
(cd "$W/traces" 2>/dev/null && tar -cf - . | split -b 15M -d - "$OUT/traces.tar.part")
grep -E "^###|exit|error|Error" "$log" | tail -40
echo "--- replay's own tables"
awk '/alone ms/ {p = 1} p {print} /^report:/ {p = 0}' "$log"
echo "--- co-location table (total ${SECONDS} s)"
cat "$OUT/colocation_table.txt"
