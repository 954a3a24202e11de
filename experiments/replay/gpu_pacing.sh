#!/usr/bin/env bash
# Compensated pacing against untraced runs (issue 44; docs/replay.md,
# *Compensated pacing*). One device call (kind nvidia-h200, one GPU, as root,
# from the repo root, .device-bin/{tracer,replay,libtracer_cupti.so} carried:
# `cargo xtask build --release` (it builds replay too) here, then copy them; python3 with torch on
# the machine; or .device-bin/bins.tar.xz holding the three, extracted first),
# ~5-7 minutes:
#
#   OUT=$OUT bash experiments/replay/gpu_pacing.sh
#
#  1. the host calibration of this machine (tracer calibrate-host);
#  2. records the latency-sensitive loop (colocation_workloads.py mlp: a
#     4-layer fp16 MLP at batch 1, a synchronization every step, 600 steps)
#     and the GPU-heavy tenant (cnn: a CNN training step at batch 32) with
#     `tracer record --replayable --gpu-timestamps` (BPF statistics on by
#     default with --replayable; scheduler lines by default);
#  3. the untraced programs alone and together, ROUNDS interleaved rounds
#     (colocation_real.py: each set up once, go files as the start barrier);
#  4. `replay mlp.rec cnn.rec --together --rounds ROUNDS` twice: --pacing
#     compensated (the default) and --pacing recorded: each tenant alone
#     (paced by its gaps) and together, with the prediction beside them;
#  5. `replay mlp.rec --mode timed` both ways (timed mode's offsets);
#  6. the table: the latency-sensitive loop's alone time, untraced median
#     against each replay (error), and the pair's slowdowns, real against
#     replayed and predicted, per pacing; the pacing lines (ns removed, per
#     call, clamped gaps, missing corrections) of each recording.
#
# Three files land in $OUT (the device tool returns at most 8): pacing_log.txt,
# pacing_table.txt, results.tgz (real.json, together_*.json, timed_*.json,
# plan_*.txt, host.json, the recordings' trace.jsonl.zst and manifest.json). A failed step is logged
# and the others go on; the table is printed last.
# Environment: ROUNDS (8), PAIR ("mlp cnn"; any two of colocation_workloads.py's
# kinds), MLP_STEPS (600), CNN_STEPS (12), BUDGET_S (450: no new step starts after it),
# REC_FLAGS (the recordings' options, "--replayable --gpu-timestamps"), PACINGS
# ("compensated recorded"), TIMED (1: step 5; 0 leaves it out), SEED (0: each tenant is
# recorded SEED times more before its recording, to fill the host speed history
# $WORK/host_speed.json that compensated pacing scales to the machine's usual speed by),
# RECORDED_SPEED_TOO (1: compensated pacing again with --recorded-speed, together_recorded-speed.json).
set -u
ROOT=$(pwd)
. "$ROOT/experiments/replay/device_bins.sh"
OUT=${OUT:-/tmp/pacing-out}
ROUNDS=${ROUNDS:-8}
read -r A B <<< "${PAIR:-mlp cnn}"
MLP_STEPS=${MLP_STEPS:-600}
CNN_STEPS=${CNN_STEPS:-12}
BUDGET_S=${BUDGET_S:-450}
REC_FLAGS=${REC_FLAGS:---replayable --gpu-timestamps}
PACINGS=${PACINGS:-compensated recorded}
TIMED=${TIMED:-1}
W=$ROOT/experiments/colocation/colocation_workloads.py
WORK=/tmp/pacing-work
rm -rf "$WORK" && mkdir -p "$WORK" "$OUT"
export TRACER_HOST_SPEED_HISTORY=$WORK/host_speed.json
SEED=${SEED:-0}
log=$OUT/pacing_log.txt
t0=$(date +%s)
left() { echo $((BUDGET_S - ($(date +%s) - t0))); }
step() { # $1: name; the rest: the command, skipped when the budget is spent
    local name=$1
    shift
    if [ "$(left)" -le 0 ]; then
        echo "### $name: skipped (budget spent)"
        return 1
    fi
    echo "### $name ($(($(date +%s) - t0)) s): $*"
    "$@"
    local rc=$?
    echo "### $name: exit $rc"
    return $rc
}
args_of() { # the workload's size options
    case $1 in
    mlp) echo "--steps $MLP_STEPS" ;;
    cnn) echo "--steps $CNN_STEPS" ;;
    *) echo "" ;;
    esac
}
{
    nvidia-smi -L
    nproc
    step calibrate "$T" calibrate-host -o "$WORK/host.json" && cat "$WORK/host.json"
    for k in $A $B; do
        for ((i = 1; i <= SEED; i++)); do
            # shellcheck disable=SC2046
            # shellcheck disable=SC2086
            step "seed $k $i" timeout 150 "$T" record $REC_FLAGS -q --force -o "$WORK/seed_$k.rec" -- \
                python3 "$W" "$k" $(args_of "$k") > /dev/null
        done
        rm -rf "$WORK/seed_$k.rec"
        # shellcheck disable=SC2046
        # shellcheck disable=SC2086
        step "record $k" timeout 150 "$T" record $REC_FLAGS -q --force -o "$WORK/$k.rec" -- \
            python3 "$W" "$k" $(args_of "$k")
        "$R" plan "$WORK/$k.rec" 2>&1 | grep -E "coverage|launches|not replayed" | head -5
        python3 - "$WORK/$k.rec" <<'PY'
import json, os, sys
d = sys.argv[1]
path = os.path.join(d, "trace.jsonl")
if not os.path.exists(path):
    sys.exit(0)
head = json.loads(open(path).readline())
last = open(path).readlines()[-1]
foot = json.loads(last) if last.startswith("{") else {}
print("header host_calibration:", head.get("host_calibration", {}).get("ns"), "ns; sched:", head.get("sched"))
print("footer host_speed:", {k: foot.get("host_speed", {}).get(k) for k in ("gauge_ns", "reference_ns", "recordings", "factor")})
print("footer bpf_stats:", {k: (v.get("runs"), round(v.get("ns_per_run", 0))) for k, v in (foot.get("bpf_stats") or {}).items()})
PY
    done
    # The real programs untraced, alone and together, interleaved; their workload options through a wrapper.
    cat > "$WORK/workloads.py" <<PY
import os, sys, runpy
extra = {"mlp": ["--steps", "$MLP_STEPS"], "cnn": ["--steps", "$CNN_STEPS"]}
sys.argv = ["$W"] + sys.argv[1:] + extra.get(sys.argv[1], [])
runpy.run_path("$W", run_name="__main__")
PY
    step real timeout 240 python3 "$ROOT/experiments/colocation/colocation_real.py" "$A" "$B" --rounds "$ROUNDS" \
        --out "$WORK/real.json" --workloads "$WORK/workloads.py"
    for p in $PACINGS; do
        "$R" plan "$WORK/$A.rec" "$WORK/$B.rec" --together --rounds "$ROUNDS" --pacing "$p" > "$WORK/plan_$p.txt" 2>&1
        grep -E "^tenant|pacing:" "$WORK/plan_$p.txt"
        step "together $p" timeout 200 "$R" "$WORK/$A.rec" "$WORK/$B.rec" --together --rounds "$ROUNDS" \
            --pacing "$p" --report "$WORK/together_$p.json"
    done
    if [ "${RECORDED_SPEED_TOO:-0}" = 1 ]; then
        step "together compensated, recorded speed" timeout 200 "$R" "$WORK/$A.rec" "$WORK/$B.rec" --together \
            --rounds "$ROUNDS" --recorded-speed --report "$WORK/together_recorded-speed.json"
    fi
    for p in $PACINGS; do
        [ "$TIMED" = 1 ] || break
        step "timed $p" timeout 90 "$R" "$WORK/$A.rec" --mode timed --iterations 5 --warmup 1 --no-cupti \
            --pacing "$p" --report "$WORK/timed_$p.json" 2>&1 | grep -E "pacing|timed" | head -8
    done
    python3 - "$WORK" "$A" "$B" <<'PY' | tee "$WORK/pacing_table.txt"
import json, os, statistics as st, sys
work, a, b = sys.argv[1:4]
def load(n):
    try:
        return json.load(open(os.path.join(work, n)))
    except (OSError, ValueError) as e:
        print(f"{n}: not read ({e})")
        return None
real = load("real.json")
med = lambda v: st.median(v) if v else float("nan")
ra = {k: [r["seconds"][k] for r in (real or {}).get("runs", []) if r["run"] == f"alone {k}"] for k in (a, b)}
rt = {k: [r["seconds"][k] for r in (real or {}).get("runs", []) if r["run"] == "together"] for k in (a, b)}
print(f"untraced, {len(ra[a])} rounds: {a} alone median {med(ra[a])*1e3:.2f} ms (min {min(ra[a] or [0])*1e3:.2f}, max {max(ra[a] or [0])*1e3:.2f})")
slow_real = {k: med(rt[k]) / med(ra[k]) for k in (a, b) if ra[k] and rt[k]}
print("| pacing | tenant | alone: untraced ms | replayed ms | error | slowdown: real | replayed | error | predicted | error |")
print("|---|---|---|---|---|---|---|---|---|---|")
for p in ("compensated", "recorded-speed", "recorded"):
    if not os.path.exists(os.path.join(work, f"together_{p}.json")):
        continue
    r = load(f"together_{p}.json")
    if not r:
        continue
    tenants = r.get("tenants") or []
    for i, k in enumerate((a, b)):
        t = tenants[i] if i < len(tenants) else {}
        m, pr = t.get("measured") or {}, t.get("predicted") or {}
        al, sl, ps = m.get("alone_median_ms"), m.get("slowdown"), pr.get("slowdown")
        rm = med(ra[k]) * 1e3 if ra[k] else None
        err = lambda x, y: f"{(x / y - 1) * 100:+.1f} %" if x and y else "–"
        sr = slow_real.get(k)
        r3 = lambda x: None if x is None else round(x, 3)
        print(f"| {p} | {k} | {r3(rm)} | {r3(al)} | {err(al, rm)} | {r3(sr)} | {r3(sl)} | {err(sl, sr)} | {r3(ps)} | {err(ps, sr)} |")
        pc = (t.get("plan") or {}).get("pacing") or {}
        print(f"|   | {k} pacing | removed {pc.get('removed_ns')} ns over {pc.get('gaps')} gaps, "
              f"{pc.get('removed_ns_per_call')} ns per call, {pc.get('clamped')} clamped; host speed {pc.get('host_speed')} ({pc.get('host_speed_from')}); missing: {pc.get('missing')} | | | | | | | |")
for p in ("compensated", "recorded"):
    r = load(f"timed_{p}.json")
    if not r:
        continue
    for m in r.get("modes", []):
        if m.get("mode") == "timed":
            w = m.get("wall_ms") or []
            print(f"timed mode (the whole recording), {p}: wall median {med(w):.2f} ms per pass; pacing {json.dumps({k: r.get('pacing', {}).get(k) for k in ('removed_ns', 'gaps', 'clamped', 'removed_ns_per_call', 'missing')})}")
PY
} > "$log" 2>&1
(cd "$WORK" && for k in $A $B; do zstd -q -f "$k.rec/trace.jsonl" -o "$k.trace.jsonl.zst" 2>/dev/null; cp "$k.rec/manifest.json" "$k.manifest.json" 2>/dev/null; done
 tar -czf "$OUT/results.tgz" ./*.json ./*.txt ./*.zst ./*.rec/manifest.json 2>/dev/null)
cp "$WORK/pacing_table.txt" "$OUT/" 2>/dev/null
tail -c 9000 "$log"
