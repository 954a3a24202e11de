#!/usr/bin/env bash
# What the probes cost a host-bound program, measured inside one process (issue 44,
# docs/replay.md *Where the rest goes*): the process-to-process spread of the GPU
# machine (a vCPU's placement on the host: 73-138 ms for the same loop,
# docs/replay/recorder_cost_2026-12-02_H200/) cancels out when the same served process
# runs its step untraced and with tracer attached (`tracer record --pid`) in turn.
#
#   OUT=$OUT bash experiments/replay/gpu_in_process_cost.sh
#
# One served process (colocation_workloads.py KIND --serve); ROUNDS rounds, each running
# every mode of MODES in turn, REPS steps per mode: untraced, or with `tracer record --pid
# PID` attached first (options of the mode, --bpf-stats). The table: per mode the median
# step, its paired difference to the untraced steps of the same round, per probed call
# (CALLS per step x STEPS), against what compensated pacing's model counts (the header's
# measured trap, the footer's bpf_stats per program run).
# Files in $OUT: inproc_log.txt, inproc.jsonl.
# Environment: KIND (mlp), STEPS (600), CALLS (9), ROUNDS (5), REPS (2), BUDGET_S (200).
set -u
ROOT=$(pwd)
. "$ROOT/experiments/replay/device_bins.sh"
OUT=${OUT:-/tmp/inproc-out}
KIND=${KIND:-mlp}
STEPS=${STEPS:-600}
CALLS=${CALLS:-9}
ROUNDS=${ROUNDS:-5}
REPS=${REPS:-2}
BUDGET_S=${BUDGET_S:-200}
W=$ROOT/experiments/colocation/colocation_workloads.py
D=/tmp/inproc-work
rm -rf "$D" && mkdir -p "$D" "$OUT"
J=$OUT/inproc.jsonl
: > "$J"
MODES=${MODES:-"untraced|-
empty|--no-gpu --no-sched --no-stacks --bench-probe empty
empty-return|--no-gpu --no-sched --no-stacks --bench-probe empty-return
nogpu|--no-gpu
nogpu-bare|--no-gpu --no-sched --no-stacks"}
mapfile -t M <<< "$MODES"
t0=$(date +%s)
k=0
go() { # one served step: its seconds in $sec (not a subshell: k counts the steps)
    k=$((k + 1))
    touch "$D/go.$KIND.$k"
    for _ in $(seq 1 3000); do
        [ -f "$D/done.$KIND.$k" ] && break
        sleep 0.01
    done
    sec=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['seconds'])" "$D/done.$KIND.$k" 2>/dev/null || echo null)
}
{
    nvidia-smi -L
    python3 "$W" "$KIND" --steps "$STEPS" --serve "$D" > "$D/server.out" 2>&1 &
    srv=$!
    for _ in $(seq 1 600); do [ -f "$D/ready.$KIND" ] && break; sleep 0.1; done
    echo "server $srv ready after $(($(date +%s) - t0)) s"
    for ((r = 1; r <= ROUNDS; r++)); do
        for e in "${M[@]}"; do
            [ $(($(date +%s) - t0)) -ge "$BUDGET_S" ] && { echo "budget spent at round $r"; break 2; }
            name=${e%%|*}
            opts=${e#*|}
            tr=
            if [ "$opts" != "-" ]; then
                tr=$D/$name.$r.jsonl
                # shellcheck disable=SC2086
                "$T" record --pid "$srv" $opts --bpf-stats -q --force -o "$tr" 2> "$D/$name.$r.err" &
                tp=$!
                for _ in $(seq 1 300); do [ -s "$tr" ] && break; sleep 0.05; done
                sleep 0.5
            fi
            secs=()
            for ((i = 0; i < REPS; i++)); do
                go
                secs+=("$sec")
            done
            if [ -n "$tr" ]; then
                kill -INT "$tp" 2>/dev/null
                wait "$tp" 2>/dev/null
                foot=$(tail -1 "$tr")
                head=$(head -1 "$tr")
            else
                foot=null
                head=null
            fi
            python3 - "$name" "$r" "${secs[*]}" "$foot" "$head" >> "$J" <<'PY'
import json, sys
name, r, secs, foot, head = sys.argv[1:6]
def j(s):
    try:
        return json.loads(s)
    except ValueError:
        return None
f, h = j(foot) or {}, j(head) or {}
print(json.dumps({"mode": name, "round": int(r), "seconds": [j(x) for x in secs.split()],
                  "bpf_stats": f.get("bpf_stats"), "probe_trap_ns": h.get("probe_trap_ns"),
                  "return_trap_ns": h.get("return_trap_ns"), "calls": f.get("calls")}))
PY
            echo "round $r $name: ${secs[*]}"
        done
    done
    touch "$D/quit"
    wait "$srv" 2>/dev/null
    python3 - "$J" "$STEPS" "$CALLS" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
steps, calls = int(sys.argv[2]), int(sys.argv[3])
per = steps * calls
base = {r["round"]: st.median([x for x in r["seconds"] if x]) for r in rows if r["mode"] == "untraced" and any(r["seconds"])}
modes = []
for r in rows:
    if r["mode"] not in modes:
        modes.append(r["mode"])
print(f"one served process; paired against the untraced steps of the same round; {calls} probed calls a step, {steps} steps")
print("| mode | rounds | median step ms | paired extra µs per call (median, range) | trap ns (header) | model µs per call |")
print("|---|---|---|---|---|---|")
for m in modes:
    rs = [r for r in rows if r["mode"] == m and any(r["seconds"])]
    if not rs:
        continue
    med = st.median([st.median([x for x in r["seconds"] if x]) for r in rs])
    d = [(st.median([x for x in r["seconds"] if x]) - base[r["round"]]) / per * 1e6 for r in rs if r["round"] in base]
    traps = [r["probe_trap_ns"] for r in rs if r.get("probe_trap_ns")]
    model = ""
    b = rs[-1].get("bpf_stats") or {}
    if b:
        # a launch: trap + its entry program; the sync: trap, entry, return trap, cu_exit (8 + 1)
        t = (traps[-1] if traps else 700) / 1e3
        rt = (rs[-1].get("return_trap_ns") or (traps[-1] if traps else 700)) / 1e3
        ent = lambda k: (b.get(k) or {}).get("ns_per_run", 0) / 1e3
        e = max(ent("cu_enter"), ent("cu_empty"))
        model = f"{((calls - 1) * (t + max(ent('cu_enter_blob'), e)) + t + e + rt + ent('cu_exit')) / calls:.2f}"
    rng = f"{min(d):+.2f}..{max(d):+.2f}" if d else ""
    print(f"| {m} | {len(rs)} | {med*1e3:.2f} | {st.median(d) if d else float('nan'):+.2f} ({rng}) | {traps[-1] if traps else ''} | {model} |")
for m in modes:
    b = [r for r in rows if r["mode"] == m and r.get("bpf_stats")]
    if b:
        print(f"{m}: " + ", ".join(f"{k} {v.get('runs')}/{round(v.get('ns_per_run', 0))}" for k, v in sorted(b[-1]["bpf_stats"].items())))
PY
} > "$OUT/inproc_log.txt" 2>&1
tail -c 6000 "$OUT/inproc_log.txt"
