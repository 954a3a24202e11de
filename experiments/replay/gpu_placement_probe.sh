#!/usr/bin/env bash
# Which host-speed probe sees the vCPU placement that makes the untraced latency-sensitive
# loop run at two speeds on the H200 VM? (issue 44, docs/replay.md *Where the rest goes*).
# One device call (as root, from the repo root):
#
#   OUT=$OUT bash experiments/replay/gpu_placement_probe.sh
#
# Builds placement_probe.so (gcc), then runs placement_probe.py (every probe, then the
# workload's step, ROUNDS times in one process, each with its CPU) in UNPINNED unpinned
# processes and in one process pinned to each CPU in turn, until BUDGET_S. Then per probe
# the correlation of its figure with the step time over all rounds.
# Files in $OUT: probe_log.txt, probe.jsonl.
# Environment: KIND (mlp), ARGS (--steps 600), ROUNDS (5), UNPINNED (6), PINNED_ROUNDS (2),
# BUDGET_S (170).
set -u
ROOT=$(pwd)
OUT=${OUT:-/tmp/probe-out}
KIND=${KIND:-mlp}
ARGS=${ARGS:---steps 600}
ROUNDS=${ROUNDS:-5}
UNPINNED=${UNPINNED:-6}
PINNED_ROUNDS=${PINNED_ROUNDS:-2}
BUDGET_S=${BUDGET_S:-170}
D=$ROOT/experiments/replay
SO=/tmp/placement_probe.so
J=$OUT/probe.jsonl
mkdir -p "$OUT"
: > "$J"
t0=$(date +%s)
{
    gcc -O2 -shared -fPIC -o "$SO" "$D/placement_probe.c" || exit 1
    for ((k = 1; k <= UNPINNED; k++)); do
        [ $(($(date +%s) - t0)) -ge "$BUDGET_S" ] && { echo "budget spent"; break; }
        # shellcheck disable=SC2086
        timeout 60 python3 "$D/placement_probe.py" "$SO" $KIND $ARGS --rounds "$ROUNDS" 2>/dev/null \
            | sed "s/^{/{\"process\": \"u$k\", /" | tee -a "$J"
    done
    ncpu=$(nproc)
    for ((c = 0; c < ncpu; c++)); do
        [ $(($(date +%s) - t0)) -ge "$BUDGET_S" ] && { echo "budget spent at cpu $c"; break; }
        # shellcheck disable=SC2086
        timeout 60 taskset -c "$c" python3 "$D/placement_probe.py" "$SO" $KIND $ARGS --rounds "$PINNED_ROUNDS" 2>/dev/null \
            | sed "s/^{/{\"process\": \"p$c\", /" | tee -a "$J"
    done
    python3 - "$J" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
keys = ["chase_256m_ns", "chase_8m_ns", "stream_ns", "spin_ns", "py_us", "rtt_us", "launch_us"]
y = [r["step_ms"] for r in rows]
def corr(a, b):
    ma, mb = st.mean(a), st.mean(b)
    sa = sum((x - ma) ** 2 for x in a) ** 0.5
    sb = sum((x - mb) ** 2 for x in b) ** 0.5
    return sum((x - ma) * (z - mb) for x, z in zip(a, b)) / (sa * sb) if sa and sb else float("nan")
print(f"{len(rows)} rounds; step ms median {st.median(y):.1f} ({min(y):.1f}-{max(y):.1f})")
cut = st.median(y)
fast = [r for r in rows if r["step_ms"] < cut]
slow = [r for r in rows if r["step_ms"] >= cut]
print("| probe | correlation with the step | median, faster half of the steps | median, slower half |")
print("|---|---|---|---|")
for k in keys:
    x = [r[k] for r in rows]
    print(f"| {k} | {corr(x, y):+.2f} | {st.median(r[k] for r in fast):.2f} | {st.median(r[k] for r in slow):.2f} |")
PY
} > "$OUT/probe_log.txt" 2>&1
tail -c 4000 "$OUT/probe_log.txt"
