#!/usr/bin/env bash
# Whether module loading explains why the rebuilt graph launches ~100 µs (+12.6 %) slower than
# the program's own graph, with or without CUPTI, with the same nodes
# (docs/replay.md). Does module loading explain it (the program's kernels are
# loaded lazily, one at a time, CUDA_MODULE_LOADING=LAZY by default; replay
# loads whole images)? Times the graph launches with CUDA events, no CUPTI:
# the program untraced under LAZY and EAGER, then replay of its recording
# under the default, LAZY and EAGER. One device call (≤ 4 min, .device-bin
# carried):   OUT=$OUT bash experiments/graphs/gpu_graph_loading.sh
# PROGRAM_MODES and REPLAY_MODES (the loading modes, default all) choose the
# runs; KERNEL_PARAMS ran an experimental `replay --kernel-params
# buffer|pointers` (not kept: docs/replay.md) and is empty by default.
set -uo pipefail
T=$(realpath .device-bin/tracer)
R=$(realpath .device-bin/replay)
OUT=${OUT:-/tmp/graph-loading-out}
mkdir -p "$OUT"
REC=/tmp/gl_capture.rec
{
for m in ${PROGRAM_MODES-LAZY EAGER}; do
    echo "### the program untraced, CUDA_MODULE_LOADING=$m"
    (cd examples && CUDA_MODULE_LOADING=$m timeout 100 python3 graphs_inference.py capture --replays 50 --time-launches) | grep "per replay"
done
rm -rf "$REC"
(cd examples && timeout 150 "$T" record --replayable --capture-data -q --force -o "$REC" -- \
    python3 graphs_inference.py capture --replays 50) > /dev/null 2>&1; echo "record exit: $?"
for m in ${REPLAY_MODES-default LAZY EAGER}; do
    echo "### replay --no-cupti, CUDA_MODULE_LOADING=$m"
    if [ "$m" = default ]; then unset CUDA_MODULE_LOADING; else export CUDA_MODULE_LOADING=$m; fi
    timeout 100 "$R" "$REC" --mode sequence --iterations 3 --warmup 1 --no-cupti --time-graph-launches \
        --report "$OUT/loading_$m.json" 2>&1 | grep -E "timed with CUDA events|identical|differ" | head -3
done
unset CUDA_MODULE_LOADING
for k in ${KERNEL_PARAMS-}; do
    echo "### replay --no-cupti --kernel-params $k"
    timeout 100 "$R" "$REC" --mode sequence --iterations 3 --warmup 1 --no-cupti --time-graph-launches \
        --kernel-params "$k" --report "$OUT/params_$k.json" 2>&1 | grep -E "timed with CUDA events|identical|differ|rror" | head -4
done
} 2>&1 | tee "$OUT/graph_loading.log"
