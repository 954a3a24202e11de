#!/usr/bin/env bash
# How much slower does the recorder make a host-bound program's
# measured phase, and which part of the recorder does it (docs/colocation.md,
# *What the recording's pacing carries*)? One device call (kind
# nvidia-h100-x1, as root from the repo root, .device-bin/tracer carried):
#
#   ROUNDS=3 OUT=$OUT bash experiments/colocation/gpu_capture_pace.sh [WORKLOAD]
#
# Runs experiments/colocation/colocation_workloads.py WORKLOAD (default gen: GPT-2
# generation at batch 1) on CPUs 2-3, ROUNDS times interleaved in each mode:
#   untraced
#   cupti:   tracer record --gpu-timestamps (every probe, CUPTI)
#   params:  tracer record --replayable --gpu-timestamps (+ launch parameters, images)
#   capture: tracer record --replayable --capture-data --gpu-timestamps (+ the
#            bytes: the thread stopped at each synchronization's and copy's return)
# and prints, per run, the phase time the program measured, and for traced
# runs the time its threads were stopped inside the phase (the trace's
# `stopped` off-CPU lines), the phase without them, and the eBPF programs'
# time over the whole run (--bpf-stats). The table: $OUT/capture_pace.md.
set -uo pipefail
T=$(realpath .device-bin/tracer)
OUT=${OUT:-/tmp/capture-pace-out}
ROUNDS=${ROUNDS:-3}
WLK=${1:-gen}
W=/tmp/capture_pace
rm -rf "$W" && mkdir -p "$OUT" "$W"
PY=python3
WL=$(realpath experiments/colocation/colocation_workloads.py)
summary() { # $1: trace file, $2: the program's JSON line, $3 mode, $4 round
    python3 - "$1" "$2" "$3" "$4" <<'PY'
import json, sys
path, prog, mode, rnd = sys.argv[1:5]
seconds = json.loads(prog)["seconds"] if prog.startswith("{") else float("nan")
stopped = bpf = 0.0
start = end = None
if path != "-":
    lines = []
    with open(path) as f:
        for line in f:
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if v.get("type") == "marker" and v.get("op") == "phase":
                if v.get("label") == "generate":
                    start = v["ts"]
                elif start is not None and end is None:
                    end = v["ts"]
            elif v.get("type") == "sched" and v.get("op") == "off_cpu" and v.get("name") == "stopped":
                lines.append((v["ts"], v["end_ts"]))
            elif "bpf_stats" in v:
                bpf = sum(s["run_time_ns"] for s in (v["bpf_stats"] or {}).values()) / 1e6
    if start is not None and end is not None:
        stopped = sum(max(0, min(e, end) - max(s, start)) for s, e in lines) / 1e6
print(f"| {mode} | {rnd} | {seconds * 1e3:.1f} | {stopped:.1f} | {seconds * 1e3 - stopped:.1f} | {bpf:.1f} |")
PY
}
{
nvidia-smi -L
echo "| mode | round | phase ms (the program's clock) | stopped in phase ms | phase without stops ms | eBPF programs ms (whole run) |"
echo "|---|---|---|---|---|---|"
for r in $(seq 1 "$ROUNDS"); do
    for m in untraced cupti params capture; do
        case $m in
            untraced) flags=();;
            cupti) flags=(--gpu-timestamps);;
            params) flags=(--replayable --gpu-timestamps);;
            capture) flags=(--replayable --capture-data --gpu-timestamps);;
        esac
        rec=$W/${m}_$r.rec
        if [ $m = untraced ]; then
            line=$(timeout 120 taskset -c 2-3 "$PY" "$WL" "$WLK" 2>/dev/null | grep '^{' | tail -1)
            summary - "$line" $m "$r"
        else
            line=$(timeout 170 "$T" record "${flags[@]}" --bpf-stats -q --force -o "$rec" -- \
                taskset -c 2-3 "$PY" "$WL" "$WLK" 2>/dev/null | grep '^{' | tail -1)
            if [ -d "$rec" ]; then f=$rec/trace.jsonl; else f=$rec; fi
            summary "$f" "$line" $m "$r"
            rm -rf "$rec"
        fi
    done
done
} 2>&1 | tee "$OUT/capture_pace.md"
