#!/usr/bin/env bash
# Does detaching CUPTI at the return of any driver call crash a traced program once the
# durations library knows it? (issue 43; docs/gpu-timestamps.md, *Where CUPTI detaches*).
# On the H200 a default recording of GPT-2 generation died of SIGSEGV in its second run (the
# library filled by the first): the first window, with nothing new to learn, ended ~100 ms
# after cuInit, during the runtime's set-up, and CUPTI was finalized at the next return.
# One device call (as root, from the repo root; .device-bin/bins.tar.xz):
#
#   OUT=$OUT bash experiments/gpu-default/gpu_detach_check.sh
#
# A fresh library (TRACER_DURATIONS_LIBRARY), one default run that fills it, then RUNS
# default runs alternating TRACER_CUPTI_DETACH_AT=any (every return, the old rule) and the
# new rule (launch returns only), each under python3 -X faulthandler; per run: the program's
# exit (footer `exit`), its windows and detaches, and the faulthandler traceback if any.
# Files in $OUT: detach_log.txt. Environment: RUNS (6), ARGS (gen --tokens 96 --reps 1).
set -u
ROOT=$(pwd)
. "$ROOT/experiments/replay/device_bins.sh"
OUT=${OUT:-/tmp/detach-out}
RUNS=${RUNS:-6}
ARGS=${ARGS:-gen --tokens 96 --reps 1}
P=$ROOT/experiments/replay/recorder_cost_reps.py
W=/tmp/detach-work
rm -rf "$W" && mkdir -p "$W/lib" "$OUT"
export TRACER_DURATIONS_LIBRARY=$W/lib/durations.json
run() { # tag rule
    local f=$W/$1
    if [ "$2" = any ]; then
        # shellcheck disable=SC2086
        TRACER_CUPTI_DETACH_AT=any timeout 150 "$T" record -q --force -o "$f.jsonl" -- python3 -X faulthandler "$P" $ARGS > "$f.out" 2> "$f.err"
    else
        # shellcheck disable=SC2086
        timeout 150 "$T" record -q --force -o "$f.jsonl" -- python3 -X faulthandler "$P" $ARGS > "$f.out" 2> "$f.err"
    fi
    echo "rc $?" >> "$f.err"
    python3 - "$f" "$1" "$2" <<'PY'
import json, sys
f, tag, rule = sys.argv[1:]
try:
    foot = json.loads(open(f + ".jsonl").read().rstrip().rsplit("\n", 1)[-1])
except (OSError, ValueError):
    foot = {}
g = foot.get("gpu_timestamps") or {}
out = open(f + ".out").read().strip().splitlines()
print(f"{tag} detach at {rule}: exit {foot.get('exit')}, calls {foot.get('calls')}, windows {g.get('windows')}, "
      f"detached {g.get('windows_detached')}, kernels {g.get('kernels')}; program printed: {out[-1][:120] if out else None}")
PY
    if grep -q "Fatal Python error\|Segmentation" "$f.err"; then
        grep -A14 "Fatal Python error" "$f.err" | head -24
    fi
}
{
    run learn new
    for ((k = 1; k <= RUNS; k++)); do
        if [ $((k % 2)) = 1 ]; then run "known$k" any; else run "known$k" new; fi
    done
} > "$OUT/detach_log.txt" 2>&1
cat "$OUT/detach_log.txt"
