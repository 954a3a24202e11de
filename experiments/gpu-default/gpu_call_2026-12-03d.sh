#!/usr/bin/env bash
# One device call (nvidia-h200, as root, from the repository root, .device-bin/bins.tar.xz),
# 2026-12-03 (ninth session), three parts, each packed into one file of $OUT:
#   jax.tgz   issue 43: JAX, the default, the default with a budget horizon (default_h) and
#             full CUPTI, 4 interleaved rounds, every run analysed (idle.csv, busy_diag.csv:
#             overlap of the measured kernels and the SM clock in the windows), the last
#             default and full traces kept (durations_diag.py here, afterwards)
#   pc.tgz    issue 44: python_call_cost.py untraced and under each mode (a counted call and a
#             recorded one, cuCtxSetCurrent, against an unprobed one inside one process)
#   gpt2.tgz  issue 43: GPT-2 generation, default / default_h / full, 2 rounds, analysed
set -u
ROOT=$(pwd)
OUT=${OUT:-/tmp/call-out}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/call.XXXXXX)
part() { # name budget-s command...
    local name=$1 lim=$2
    shift 2
    mkdir -p "$W/$name"
    echo "== $name $(date +%T)"
    OUT=$W/$name timeout -k 10 "$lim" "$@" >"$W/$name/stdout.txt" 2>&1
    echo "rc $?" >>"$W/$name/stdout.txt"
    tail -3 "$W/$name/stdout.txt"
    tar -C "$W" -czf "$OUT/$name.tgz" "$name"
}
part jax 240 env PROGS=jax MODES="default default_h full" ROUNDS=4 ANALYZE_EACH=1 BUDGET_S=190 \
    RUN_TIMEOUT_S=60 ANALYSIS_TIMEOUT_S=40 bash "$ROOT/experiments/gpu-default/gpu_default.sh"
part pc 90 env ROUNDS=2 MODES="untraced nogpu replayable default" \
    bash "$ROOT/experiments/replay/gpu_python_call_cost.sh"
part gpt2 200 env PROGS=gpt2 MODES="default default_h full" ROUNDS=2 ANALYZE_EACH=1 BUDGET_S=140 \
    RUN_TIMEOUT_S=60 ANALYSIS_TIMEOUT_S=40 bash "$ROOT/experiments/gpu-default/gpu_default.sh"
ls -la "$OUT"
