#!/usr/bin/env bash
# "See the GPU by default" (issue 43): what the new default recording costs
# and how close its idle share comes to full CUPTI. One device call (kind
# nvidia-h200, as root, from the repository root; python3 with torch,
# transformers, JAX), at most BUDGET_S seconds of rounds plus ~1 min of
# analysis and packing:
#
#   PROGS="gpt2 mlp" ROUNDS=12 BUDGET_S=480 OUT=$OUT bash experiments/gpu-default/gpu_default.sh
#
# Binaries: .device-bin/bins.tar.xz (tracer, replay, libtracer_cupti.so),
# unpacked into a temporary folder; or TRACER=/path/to/tracer
# (libtracer_cupti.so beside it); else .device-bin/tracer.
#
# Programs (PROGS, a subset of "gpt2 launch jax mlp train"; each prints
# STEADY_S, the time of its timed part after its warm-up):
#   gpt2    torch_workloads.py gpt2   GPT-2 small generation, batch 1, 16 new tokens x 2 timed
#   launch  launch_bound.py           100k one-element add_ kernels, a synchronization every 5000
#   jax     jax_loop.py               a jitted 4-layer MLP training step, 4000 steps, blocking every 10
#   mlp     torch_workloads.py mlp    4-layer fp16 MLP at batch 1, a synchronization every step, 5000 steps
#   train   torch_workloads.py train  CNN training step at batch 32, 20 steps
# Their options: GPT2_ARGS, LAUNCH_ARGS, JAX_ARGS, MLP_ARGS, TRAIN_ARGS.
#
# Modes (MODES, default "untraced nogpu default full"), all with -q:
#   untraced  the program alone
#   nogpu     tracer record --no-gpu          (the pure-uprobe mode, the old default)
#   default   tracer record                   (CUPTI in short adaptive windows + the durations library)
#   full      tracer record --gpu-timestamps  (CUPTI all the time: the timeline's truth)
# The durations library: TRACER_DURATIONS_LIBRARY=$WORK/lib/MODE/durations per
# mode (its parent exists, the path itself not), so that full runs do not fill
# the library the default runs read; LIB_SHARED=1: one for all modes.
#
# ANALYZE_EACH=1: every traced run (not nogpu) analysed as it ends (`tracer gaps --json`, under
# ANALYSIS_TIMEOUT_S), its whole window's and steady phase's idle share and busy time and its
# window check a line of idle.csv (idle_of_run.py), so that modes compare by their medians over
# the rounds rather than one trace each; idle_table.py makes the table.
#
# FULL_AT_END=1 (with MODES not holding full): one full run per program after the
# rounds only, for the accuracy tables.
# Steps: per program one warm-up `default` run that fills the library
# (round 0, mode first_default, its trace kept); then ROUNDS rounds, each
# running every program in every mode once, the modes' order rotated per
# round (interleaved, unpinned). No round starts when the time used plus the
# previous round's duration would pass BUDGET_S. Every run is under
# `timeout RUN_TIMEOUT_S` (120); a failing run is recorded with its rc. The
# trace of the last default and last full run of each program is kept, the
# others deleted. Then `tracer gaps --json` and `tracer report --json` of the
# kept traces (each under `timeout ANALYSIS_TIMEOUT_S`, 60), their header and
# footer lines, and the tables (gpu_default_table.py). A TERM or INT stops the
# run in flight and writes the tables of the runs so far (without the traces'
# analysis).
#
# Files in $OUT (at most 8):
#   runs.csv      every run as it ends: prog,round,mode,steady_s,wall_s,rc,pos
#   idle.csv      ANALYZE_EACH=1: every traced run's idle and busy figures (idle_of_run.py)
#   footers.jsonl every traced run's footer gpu_timestamps, gpu_window lines and phase markers
#                 (window_model.py: the windows' cost per run by the cost model)
#   log.txt       the log (versions, each run's line, failures' stderr tails, the table)
#   table.md      the tables (markdown); table.json the same figures
#   analysis.tgz  analysis/ (PROG.KIND.{gaps,report,header,footer}.json and
#                 their stderr, KIND = first_default|default|full), out/ (every
#                 run's stdout and stderr), lib/ (the durations libraries)
#   traces.tgz    the kept traces (zstd), as many as fit in 15 MiB: default,
#                 full, then first_default of each program
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here" || exit 2
D=$here/experiments/gpu-default
OUT=${OUT:-/tmp/gpu-default-out}
PROGS=${PROGS:-gpt2 launch jax mlp train}
MODES=${MODES:-untraced nogpu default full}
ROUNDS=${ROUNDS:-12}
BUDGET_S=${BUDGET_S:-480}
RUN_TIMEOUT_S=${RUN_TIMEOUT_S:-120}
ANALYSIS_TIMEOUT_S=${ANALYSIS_TIMEOUT_S:-60}
LIB_SHARED=${LIB_SHARED:-0}
ANALYZE_EACH=${ANALYZE_EACH:-0}
# mode default_h: the default with these record options (an A/B of the windows' policy)
DEFAULT_H_ARGS=${DEFAULT_H_ARGS:---gpu-windows 100/2000/20000/2/1000}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/gpu-default.XXXXXX)
A=$WORK/analysis
mkdir -p "$A" "$WORK/out" "$WORK/keep" "$WORK/lib" "$WORK/bin"
log=$OUT/log.txt
csv=$OUT/runs.csv
SECONDS=0
say() { echo "[$(date +%T) +${SECONDS}s] $*" | tee -a "$log"; }
: > "$log"
echo "prog,round,mode,steady_s,wall_s,rc,pos" > "$csv"
[ "$ANALYZE_EACH" = 1 ] && echo "prog,round,mode,steady_s,whole_idle_pct,whole_busy_ms,steady_idle_pct,steady_busy_ms,window_check_points,window_check_windows" >"$OUT/idle.csv"
[ "$ANALYZE_EACH" = 1 ] && echo "prog,round,mode,kernels,sum_ms,union_ms,overlap_pct,steady_kernels,steady_sum_ms,steady_union_ms,steady_overlap_pct,clock_windows_mhz,clock_steady_mhz,windows" >"$OUT/busy_diag.csv"
export PYTHONUNBUFFERED=1

# --- binaries
. "$D/tracer_bin.sh"
find_tracer
[ -f "$(dirname "$T")/libtracer_cupti.so" ] || say "WARNING: no libtracer_cupti.so beside $T: default and full modes need it"

# --- the machine and the versions
say "tracer: $T ($("$T" --version 2>&1 | head -1))"
{
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
    echo "cores: $(nproc); kernel: $(uname -r)"
    python3 --version
    timeout 60 python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
    case " $PROGS " in *" gpt2 "*) timeout 60 python3 -c "import transformers; print('transformers', transformers.__version__)" ;; esac
    case " $PROGS " in *" jax "*) timeout 60 python3 -c "import jax; print('jax', jax.__version__, jax.devices())" ;; esac
} >>"$log" 2>&1
rec_help=$("$T" record --help 2>&1)
NOGPU_FLAG=--no-gpu
if ! grep -q -- "--no-gpu" <<<"$rec_help"; then
    NOGPU_FLAG=
    say "WARNING: this tracer has no --no-gpu: mode nogpu runs plain 'tracer record' (the old default: then default = nogpu)"
fi
echo "$rec_help" | grep -iE -- "--no-gpu|--gpu|durations|library|cupti" >>"$log" 2>&1
say "PROGS=$PROGS MODES=$MODES ROUNDS=$ROUNDS BUDGET_S=$BUDGET_S RUN_TIMEOUT_S=$RUN_TIMEOUT_S ANALYSIS_TIMEOUT_S=$ANALYSIS_TIMEOUT_S LIB_SHARED=$LIB_SHARED work=$WORK"

# --- programs and modes
. "$D/programs.sh"
lib_of() { # mode -> the durations library path (none for untraced runs)
    local m=$1
    [ "$m" = untraced ] && return
    [ "$m" = first_default ] && m=default
    [ "$m" = default_h ] && m=default # the same library as the default: an A/B of the windows' policy
    [ "$LIB_SHARED" = 1 ] && m=shared
    mkdir -p "$WORK/lib/$m"
    echo "$WORK/lib/$m/durations"
}
run_one() { # prog round mode pos: one run, its CSV line, its trace kept or deleted
    local prog=$1 r=$2 m=$3 pos=$4
    local tag=$prog.$m.r$r
    local tr=$WORK/$tag.jsonl so=$WORK/out/$tag.stdout se=$WORK/out/$tag.stderr
    local -a cmd pre
    read -r -a cmd <<<"$(cmd_of "$prog")"
    case $m in
    untraced) pre=() ;;
    nogpu) pre=("$T" record -q --force $NOGPU_FLAG -o "$tr" --) ;;
    default | first_default) pre=("$T" record -q --force -o "$tr" --) ;;
    default_h) read -r -a hargs <<<"$DEFAULT_H_ARGS"; pre=("$T" record -q --force "${hargs[@]}" -o "$tr" --) ;;
    full) pre=("$T" record -q --force --gpu-timestamps -o "$tr" --) ;;
    *) say "unknown mode $m"; return ;;
    esac
    local t0 t1 rc wall steady
    t0=$(date +%s.%N)
    # in the background and waited for, so that a TERM to this script is handled at once (on_term)
    TRACER_DURATIONS_LIBRARY=$(lib_of "$m") timeout -k 10 "$RUN_TIMEOUT_S" ${pre[@]+"${pre[@]}"} "${cmd[@]}" \
        >"$so" 2>"$se" </dev/null &
    child=$!
    wait "$child"
    rc=$?
    child=
    t1=$(date +%s.%N)
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
    steady=$(awk '$1 == "STEADY_S" { v = $2 } END { print v }' "$so")
    echo "$prog,$r,$m,$steady,$wall,$rc,$pos" >>"$csv"
    echo "  $prog r$r $m: steady ${steady:-none} s, wall $wall s, rc $rc" >>"$log"
    if [ "$rc" != 0 ] || [ -z "$steady" ]; then
        { echo "  --- $tag stderr (tail):"; tail -n 8 "$se" | cut -c1-400; } >>"$log"
    fi
    # ANALYZE_EACH=1: every traced run's idle share and busy time (idle.csv), before its trace goes
    if [ "$ANALYZE_EACH" = 1 ] && [ "$rc" = 0 ] && [ -s "$tr" ] && [ "$m" != nogpu ]; then
        timeout "$ANALYSIS_TIMEOUT_S" "$T" gaps "$tr" --json >"$WORK/each.gaps.json" 2>/dev/null
        python3 "$D/idle_of_run.py" "$WORK/each.gaps.json" "$prog" "$r" "$m" "$steady" >>"$OUT/idle.csv" 2>>"$log"
        # the measured kernels' overlap and the SM clock in the windows against the steady phase's
        grep -F -e '"type":"gpu"' -e '"type":"power"' -e '"type":"gpu_window"' -e '"type":"marker"' "$tr" 2>/dev/null \
            | python3 "$D/busy_diag.py" "$prog" "$r" "$m" >>"$OUT/busy_diag.csv" 2>>"$log"
    fi
    # every traced run's footer, gpu_window lines and phase markers (footers.jsonl): the
    # windows' cost per run by the cost model (window_model.py)
    if [ "$rc" = 0 ] && [ -s "$tr" ] && [ "$m" != untraced ]; then
        grep -F -e '"type":"gpu_window"' -e '"type":"marker"' "$tr" >"$WORK/each.lines" 2>/dev/null
        tail -n 1 "$tr" >"$WORK/each.footer" 2>/dev/null
        python3 - "$prog" "$r" "$m" "$steady" "$wall" "$WORK/each.lines" "$WORK/each.footer" >>"$OUT/footers.jsonl" 2>>"$log" <<'PY'
import json, sys
prog, r, m, steady, wall, lines, footer = sys.argv[1:8]
wins, marks = [], []
for l in open(lines):
    try:
        x = json.loads(l)
    except ValueError:
        continue
    if x.get("type") == "gpu_window":
        wins.append([x.get("ts"), x.get("end_ts"), x.get("records"), x.get("demanded")])
    elif x.get("type") == "marker" and x.get("op") == "phase":
        marks.append([x.get("ts"), x.get("label")])
try:
    f = json.loads(open(footer).read())
except ValueError:
    f = {}
g = dict(f.get("gpu_timestamps") or {})
g.pop("window_demands", None)
print(json.dumps({"prog": prog, "round": int(r), "mode": m, "steady_s": float(steady or "nan"), "wall_s": float(wall),
                  "gpu_timestamps": g, "windows": wins, "phases": marks, "lost": f.get("lost")}))
PY
    fi
    case $m in
    default | default_h | full | first_default)
        if [ "$rc" = 0 ] && [ -s "$tr" ]; then mv -f "$tr" "$WORK/keep/$prog.$m.jsonl"; else rm -f "$tr"; fi ;;
    *) rm -f "$tr" ;;
    esac
}

# A TERM (the device's time limit) still leaves a table of what ran.
child=
on_term() {
    [ -n "$child" ] && kill -TERM "$child" 2>/dev/null
    say "terminated: the table of the runs so far"
    python3 "$D/gpu_default_table.py" --csv "$csv" --dir "$A" --md "$OUT/table.md" --json "$OUT/table.json" >>"$log" 2>&1
    exit 143
}
trap on_term TERM INT

read -r -a progs <<<"$PROGS"
read -r -a modes <<<"$MODES"
valid=()
for p in "${progs[@]}"; do
    if [ -n "$(cmd_of "$p")" ]; then valid+=("$p"); else say "unknown program $p: skipped"; fi
done
progs=(${valid[@]+"${valid[@]}"})
[ ${#progs[@]} -gt 0 ] || { say "no programs"; exit 2; }
n=${#modes[@]}

# --- warm-up: one default run per program (fills the library)
wu0=$SECONDS
for p in "${progs[@]}"; do
    say "$p: warm-up default run (first_default): $(cmd_of "$p")"
    run_one "$p" 0 first_default 0
done
est=$(((SECONDS - wu0) * n)) # a round's estimate before the first one ran

# --- rounds: every program in every mode, the order rotated per round
done_rounds=0
for r in $(seq 1 "$ROUNDS"); do
    # the first round runs unless the budget is spent already
    if [ "$SECONDS" -ge "$BUDGET_S" ] || { [ "$r" -gt 1 ] && [ $((SECONDS + est)) -gt "$BUDGET_S" ]; }; then
        say "round $r not started: ${SECONDS}s used + ${est}s for a round > BUDGET_S=$BUDGET_S"
        break
    fi
    r0=$SECONDS
    for p in "${progs[@]}"; do
        order=()
        for i in $(seq 0 $((n - 1))); do order+=("${modes[$(((i + r - 1) % n))]}"); done
        echo "  round $r $p: ${order[*]}" >>"$log"
        pos=0
        for m in "${order[@]}"; do
            pos=$((pos + 1))
            run_one "$p" "$r" "$m" "$pos"
        done
    done
    est=$((SECONDS - r0))
    done_rounds=$r
    say "round $r done (${est}s)"
done
say "$done_rounds rounds of $ROUNDS"
# FULL_AT_END=1: MODES without full, one full run per program after the rounds (the
# accuracy tables' truth), so that the rounds fit more repetitions of the other modes
if [ "${FULL_AT_END:-0}" = 1 ]; then
    for p in "${progs[@]}"; do
        say "$p: one full run after the rounds"
        run_one "$p" $((done_rounds + 1)) full 1
    done
fi

# --- analysis of the kept traces
for p in "${progs[@]}"; do
    for k in first_default default default_h full; do
        f=$WORK/keep/$p.$k.jsonl
        [ -f "$f" ] || { say "$p $k: no trace kept"; continue; }
        timeout "$ANALYSIS_TIMEOUT_S" "$T" gaps "$f" --json >"$A/$p.$k.gaps.json" 2>"$A/$p.$k.gaps.stderr"
        g=$?
        timeout "$ANALYSIS_TIMEOUT_S" "$T" report "$f" --json >"$WORK/$p.$k.report.full.json" 2>"$A/$p.$k.report.stderr"
        rp=$?
        # the report without its large parts (stacks, flame trees, kernel lists): the full one goes with the traces
        python3 - "$WORK/$p.$k.report.full.json" "$A/$p.$k.report.json" <<'PY' 2>>"$A/$p.$k.report.stderr"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except ValueError as e:
    sys.exit(f"report not read: {e}")
keep = {"verdict", "phases", "iterations", "idle_basis", "calibrated_from", "calibration_coverage", "timeline"}
slim = {k: v for k, v in r.items() if k in keep or len(json.dumps(v)) < 20000}
json.dump(slim, open(sys.argv[2], "w"), indent=1)
PY
        head -n 1 "$f" >"$A/$p.$k.header.json"
        tail -n 1 "$f" >"$A/$p.$k.footer.json"
        say "$p $k: gaps rc $g, report rc $rp, trace $(du -h "$f" | cut -f1), $(wc -l <"$f") lines"
        grep -v '^ *$' "$A/$p.$k.gaps.stderr" "$A/$p.$k.report.stderr" 2>/dev/null | head -4 | cut -c1-300 >>"$log"
    done
done
ls -laR "$WORK/lib" >>"$log" 2>&1

# --- tables
trap - TERM INT
python3 "$D/gpu_default_table.py" --csv "$csv" --dir "$A" --md "$OUT/table.md" --json "$OUT/table.json" >>"$log" 2>&1 ||
    say "table: exit $?"

# --- packing: the small files always, the traces as far as they fit
tar -C "$WORK" -czf "$OUT/analysis.tgz" analysis out lib 2>>"$log"
mkdir -p "$WORK/pack"
limit=$((15 * 1024 * 1024))
for k in default full first_default; do
    for p in "${progs[@]}"; do
        for f in "$WORK/keep/$p.$k.jsonl" "$WORK/$p.$k.report.full.json"; do
            [ -f "$f" ] || continue
            z=$WORK/pack/$(basename "$f").zst
            zstd -q -T0 -12 -f "$f" -o "$z" 2>/dev/null || { z=$WORK/pack/$(basename "$f").gz; gzip -6 -c "$f" >"$z"; }
            size=$(du -cb "$WORK"/pack/* | tail -1 | cut -f1)
            if [ "$size" -gt "$limit" ]; then
                rm -f "$z"
                say "traces.tgz: $(basename "$f") left out (15 MiB)"
            fi
        done
    done
done
tar -C "$WORK/pack" -czf "$OUT/traces.tgz" . 2>>"$log"
say "done: $(ls "$OUT" | tr '\n' ' ')"
[ "$ANALYZE_EACH" = 1 ] && python3 "$D/idle_table.py" "$OUT/idle.csv" >>"$log" 2>&1
tail -n 60 "$OUT/table.md" 2>/dev/null
