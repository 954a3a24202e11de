#!/usr/bin/env bash
# What one probed driver call costs a Python program (issue 44): python_call_cost.py
# (probed cuGetErrorString against unprobed abs, blocks alternated inside one process)
# untraced and under each recording mode, interleaved; each traced run's header (the
# trap measured at the start, warm and, with TRACER_TRAP_COLD, after a walk over each
# size) and footer bpf_stats beside it. One device call (kind nvidia-h200, as root, from
# the repository root):
#
#   ROUNDS=3 OUT=$OUT bash experiments/replay/gpu_python_call_cost.sh
#
# Environment: ROUNDS (3), MODES ("untraced nogpu replayable"), COLD (the sizes in KiB,
# "16,1024,16384,65536"), ARGS (python_call_cost.py's, "--reps 15 --n 2000"), TRACER_ARGS
# (more record options, e.g. --libcuda for a stand-in library).
# Files in $OUT: pc_log.txt, pc_runs.jsonl (per run: mode, round, the program's figures,
# the header's probe_trap fields, the footer's bpf_stats), pc_table.md
# (python_call_cost_table.py), pc_sysinfo.txt (kernel, CPU flags, mitigations).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here" || exit 2
OUT=${OUT:-/tmp/python-call-cost}
ROUNDS=${ROUNDS:-3}
MODES=${MODES:-untraced nogpu replayable}
COLD=${COLD:-16,1024,16384,65536}
ARGS=${ARGS:---reps 15 --n 2000}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/python-call-cost.XXXXXX)
log=$OUT/pc_log.txt
: >"$log"
SECONDS=0
say() { echo "[$(date +%T) +${SECONDS}s] $*" | tee -a "$log"; }
. "$here/experiments/gpu-default/tracer_bin.sh"
find_tracer
{
    uname -a
    nproc
    grep -m1 "model name" /proc/cpuinfo
    grep -m1 -o -w -E "pcid|invpcid|pti|x2apic|tsc_deadline_timer|hypervisor" /proc/cpuinfo | sort -u | tr '\n' ' '
    echo
    grep -H . /sys/devices/system/cpu/vulnerabilities/* 2>/dev/null
    cat /proc/cmdline
} >"$OUT/pc_sysinfo.txt" 2>&1
read -r -a pargs <<<"$ARGS"
read -r -a targs <<<"${TRACER_ARGS:-}"
runs=$OUT/pc_runs.jsonl
: >"$runs"
read -r -a modes <<<"$MODES"
for r in $(seq 1 "$ROUNDS"); do
    n=${#modes[@]}
    for i in $(seq 0 $((n - 1))); do
        m=${modes[$(((i + r) % n))]}
        tr=$WORK/$m.$r.jsonl
        rm -rf "$tr" "$WORK/$m.$r.rec"
        case $m in
        untraced) pre=() ;;
        nogpu) pre=("$T" record -q --force ${targs[@]+"${targs[@]}"} --no-gpu --bpf-stats -o "$tr" --) ;;
        default) pre=("$T" record -q --force ${targs[@]+"${targs[@]}"} --bpf-stats -o "$tr" --) ;;
        replayable) tr=$WORK/$m.$r.rec; pre=("$T" record -q --force ${targs[@]+"${targs[@]}"} --replayable -o "$tr" --) ;;
        esac
        TRACER_TRAP_COLD=$COLD timeout -k 5 120 ${pre[@]+"${pre[@]}"} python3 experiments/replay/python_call_cost.py "${pargs[@]}" \
            >"$WORK/out" 2>"$WORK/err" </dev/null
        rc=$?
        say "round $r $m: rc $rc $(tail -c 300 "$WORK/out")"
        [ "$rc" = 0 ] || tail -5 "$WORK/err" >>"$log"
        python3 - "$m" "$r" "$WORK/out" "$tr" >>"$runs" 2>>"$log" <<'PY'
import json, os, sys
m, r, out, tr = sys.argv[1:5]
res = {"mode": m, "round": int(r)}
try:
    res["program"] = json.loads(open(out).read().strip().splitlines()[-1])
except Exception as e:
    res["program_error"] = str(e)
if m != "untraced":
    p = os.path.join(tr, "trace.jsonl") if os.path.isdir(tr) else tr
    try:
        lines = open(p).read().splitlines()
        h = json.loads(lines[0])
        f = next(json.loads(l) for l in reversed(lines) if '"footer"' in l and json.loads(l).get("type") == "footer")
        res["header"] = {k: h.get(k) for k in ("probe_trap_ns", "return_trap_ns", "probe_trap")}
        res["bpf_stats"] = f.get("bpf_stats")
        res["calls"] = f.get("calls")
    except Exception as e:
        res["trace_error"] = str(e)
print(json.dumps(res))
PY
        rm -rf "$tr"
    done
done
python3 experiments/replay/python_call_cost_table.py "$runs" >"$OUT/pc_table.md" 2>>"$log"
cat "$OUT/pc_table.md" | tee -a "$log"
rm -rf "$WORK"
