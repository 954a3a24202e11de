#!/usr/bin/env bash
# Where a default recording's window demands go (issue 43): RUNS default
# recordings of one program against one fresh durations library (the first
# learns, the rest read it), each followed by what its trace says about its
# windows: the footer's `gpu_timestamps` (windows, `window_demands`: when the
# tracer asked and for what; the injection library's exit note: where its
# window thread was and the demands it saw; each demand as [ms since the first
# GPU-work call, ms the collector was behind, configurations, of them
# under-measured, the first's kernel]), the `gpu_window` lines, the first
# and last GPU-work call (kernel, graph, sync, memcpy lines), the graph launches, and the idle share and busy time
# (`tracer gaps --json`, idle_of_run.py). One device call (kind nvidia-h200,
# as root, from the repository root; .device-bin/bins.tar.xz):
#
#   PROG=jax RUNS=3 OUT=$OUT bash experiments/gpu-default/gpu_demand_check.sh
#
# PROG: one of programs.sh's (gpt2 launch jax mlp train). FULL=1: then one
# `--gpu-timestamps` run (CUPTI all the time, its own library), the truth the
# default runs' idle share and busy time compare with. Files in $OUT:
# demand_log.txt (the summary, run by run), demand.jsonl (one object per run:
# the footer's gpu_timestamps, the window lines, the call span, the idle figures).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here" || exit 2
D=$here/experiments/gpu-default
OUT=${OUT:-/tmp/demand-out}
PROG=${PROG:-jax}
RUNS=${RUNS:-3}
RUN_TIMEOUT_S=${RUN_TIMEOUT_S:-120}
FULL=${FULL:-0}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/demand.XXXXXX)
log=$OUT/demand_log.txt
: >"$log"
say() { echo "[$(date +%T)] $*" | tee -a "$log"; }
. "$D/tracer_bin.sh"
find_tracer
. "$D/programs.sh"
read -r -a cmd <<<"$(cmd_of "$PROG")"
[ ${#cmd[@]} -gt 0 ] || { say "unknown program $PROG"; exit 2; }
mkdir -p "$WORK/lib"
say "tracer $("$T" --version 2>&1 | head -1); $PROG: ${cmd[*]}"
last=$RUNS
[ "$FULL" = 1 ] && last=$((RUNS + 1))
for i in $(seq 1 "$last"); do
    tr=$WORK/run$i.jsonl
    t0=$(date +%s.%N)
    lib=$WORK/lib/durations flags=()
    [ "$i" -gt "$RUNS" ] && lib=$WORK/lib/full flags=(--gpu-timestamps)
    TRACER_DURATIONS_LIBRARY=$lib timeout -k 10 "$RUN_TIMEOUT_S" \
        "$T" record -q --force ${flags[@]+"${flags[@]}"} -o "$tr" -- "${cmd[@]}" >"$WORK/run$i.stdout" 2>"$WORK/run$i.stderr" </dev/null
    rc=$?
    wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    steady=$(awk '$1 == "STEADY_S" { v = $2 } END { print v }' "$WORK/run$i.stdout")
    say "run $i${flags[*]:+ (${flags[*]})}: rc $rc, wall $wall s, steady ${steady:-none} s, trace $(du -m "$tr" 2>/dev/null | cut -f1) MB"
    [ "$rc" = 0 ] || tail -5 "$WORK/run$i.stderr" | cut -c1-300 >>"$log"
    timeout 90 "$T" gaps "$tr" --json >"$WORK/gaps$i.json" 2>/dev/null
    idle=$(python3 "$D/idle_of_run.py" "$WORK/gaps$i.json" "$PROG" "$i" default "${steady:-0}" 2>/dev/null)
    grep -F '"type":"gpu_window"' "$tr" >"$WORK/windows$i.jsonl"
    grep -m1 -E '"type":"(kernel|graph|sync|memcpy)"' "$tr" >"$WORK/first$i.json"
    tac "$tr" | grep -m1 -E '"type":"(kernel|graph|sync|memcpy)"' >"$WORK/last$i.json"
    grep -F '"op":"graph_launch"' "$tr" | sed -n '1p;$p' >"$WORK/graph$i.jsonl"
    graphs=$(grep -c -F '"op":"graph_launch"' "$tr")
    tail -1 "$tr" >"$WORK/footer$i.json"
    python3 - "$WORK" "$i" "$graphs" "$idle" <<'PY' | tee -a "$log" >>"$OUT/demand.jsonl"
import json, sys
w, i, graphs, idle = sys.argv[1], sys.argv[2], int(sys.argv[3] or 0), sys.argv[4]
def one(p):
    try:
        return json.loads(open(p).read().strip() or "null")
    except (OSError, ValueError):
        return None
f = one(f"{w}/footer{i}.json") or {}
g = {k: v for k, v in (f.get("gpu_timestamps") or {}).items() if k not in ("durations", "by_kernel")}
first, last = one(f"{w}/first{i}.json") or {}, one(f"{w}/last{i}.json") or {}
gl = [json.loads(l) for l in open(f"{w}/graph{i}.jsonl") if l.strip()]
wins = [json.loads(l) for l in open(f"{w}/windows{i}.jsonl") if l.strip()]
t0 = first.get("ts", 0)
rel = lambda t: None if t is None else round((t - t0) / 1e6, 1)
out = {
    "run": int(i),
    "calls_ms": [0, rel(last.get("ts"))],
    "graph_launches": graphs,
    "graph_launch_ms": [rel(x.get("ts")) for x in gl],
    "windows_ms": [[rel(x["ts"]), rel(x.get("end_ts")), x.get("records"), x.get("demanded")] for x in wins],
    "demands_ms": [[rel(d.get("ts")), round((d.get("behind_ns") or 0) / 1e6, 1), d.get("configs"), d.get("under_measured"), d.get("kernel")]
                   for d in g.get("window_demands") or []],
    "notes": [n for p in g.get("processes") or [] for n in p.get("notes") or []],
    "idle_csv": idle,
    "lost": (f.get("lost") or {}).get("total"),
    "shed": (f.get("stack_sampling") or {}).get("shed_under_load"),
    "collector_cpu_s": round(sum((f.get("collector") or {}).get(k) or 0 for k in ("cpu_user_s", "cpu_system_s")), 2),
    "gpu_timestamps": {k: v for k, v in g.items() if k not in ("window_demands", "processes")},
}
print(json.dumps(out))
PY
    rm -f "$tr"
done
say "done"
