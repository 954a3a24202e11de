#!/usr/bin/env bash
# Why the rebuilt graphs' kernel-to-kernel transitions idle
# 4-8 µs longer than the program's own graph (docs/replay.md, *Fidelity of
# copies and graph launches*). One device call (nvidia-h100-x1, ≤ 4 min, as
# root from the repo root, .device-bin/{tracer,replay,libtracer_cupti.so}
# carried):
#
#   OUT=$OUT bash experiments/graphs/gpu_graph_dot.sh
#
# Records examples/graphs_inference.py capture --replays 50 with
# --replayable --gpu-timestamps, the program writing its captured graph as
# DOT (--graph-dot: torch's debug_dump, cudaGraphDebugDotPrint verbose); then
# replays it (sequence, --iterations 3) with CUPTI and without (--no-cupti:
# does the replay's own CUPTI cost the transitions?), each timing its graph
# launches with CUDA events (--time-graph-launches), writing its rebuilt
# graph (--graph-dot). Prints the program's graph launches timed by CUDA
# events untraced and recorded, each replay's pass time and per-transition
# idle, and the node kinds and kernel node attributes of both graphs side by
# side (experiments/graphs/graph_dot_diff.py); the DOT files are in $OUT/graph_dot.tgz.
# (--graph-chain, rebuilding as one chain, gave the same figures as the
# recorded dependencies on 2026-11-27: the capture is one chain.)
set -uo pipefail
T=$(realpath .device-bin/tracer)
R=$(realpath .device-bin/replay)
OUT=${OUT:-/tmp/graph-dot-out}
mkdir -p "$OUT"
REC=/tmp/gd_capture.rec
W=/tmp/gd
rm -rf "$W" "$REC" && mkdir -p "$W"
{
nvidia-smi -L
echo "### the program untraced (its graph launches timed with CUDA events)"
(cd examples && timeout 100 python3 graphs_inference.py capture --replays 50 --time-launches)
echo "### the program recorded"
(cd examples && timeout 150 "$T" record --replayable --gpu-timestamps -q --force -o "$REC" -- \
    python3 graphs_inference.py capture --replays 50 --time-launches --graph-dot "$W/program.dot"); echo "record exit: $?"
for v in deps no-cupti; do
    extra=()
    [ "$v" = chain ] && extra=(--graph-chain)
    [ "$v" = no-cupti ] && extra=(--no-cupti)
    echo "### replay $v"
    timeout 120 "$R" "$REC" --mode sequence --iterations 3 --warmup 1 --graph-dot "$W/replay_$v" \
        --time-graph-launches --report "$W/report_$v.json" "${extra[@]}" > "$W/replay_$v.txt" 2>&1
    echo "replay exit: $?"
    grep -E "per graph launch|idle inside|identical|differ|timed with CUDA events" "$W/replay_$v.txt" | head -8
    python3 - "$W/report_$v.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for m in r.get("modes", []):
    print(f"pass (CUDA events): mean {m.get('mean_us', 0):.1f} us, min {m.get('min_us', 0):.1f} us")
    g = ((m.get("cupti") or {}).get("graph_launches")) or {}
    gaps = g.get("gaps") or {}
    print(f"span per launch: recorded {g.get('recorded', {}).get('span_us_median')} µs, replayed "
          f"{g.get('replayed', {}).get('span_us_median')} µs; idle inside: {gaps.get('recorded_us')} -> {gaps.get('replayed_us')} µs")
    for t in gaps.get("transitions", [])[:12]:
        print(f"  {t['from'][:40]} -> {t['to'][:40]} ({t['count']}x): {t['recorded_us']} -> {t['replayed_us']} µs")
PY
done
python3 experiments/graphs/graph_dot_diff.py "$W/program.dot" "$W"/replay_deps/graph-0.dot
} > "$OUT/graph_dot.log" 2>&1
(cd "$W" && tar -czf "$OUT/graph_dot.tgz" ./*.dot replay_* report_*.json 2>/dev/null)
tail -c 11000 "$OUT/graph_dot.log"
