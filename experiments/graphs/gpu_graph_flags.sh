#!/usr/bin/env bash
# Whether graph instantiation flags explain why the rebuilt graph launches ~100 µs (+12.6 %) slower than
# the program's own graph (docs/replay.md). PyTorch instantiates its graph
# with flags 0x9 (auto-free on launch | use node priority); replay used 0
# until it took the recorded flags. Times the graph launches with CUDA
# events, no CUPTI: the program untraced, then replay of its recording with
# each of VARIANTS, in ROUNDS interleaved rounds: `recorded` (the recorded
# flags, the default), `flagsN` (--graph-instantiate-flags N), `afterpass`
# (--graph-build-after-pass: the graphs instantiated after every kernel has
# run once in the context, as the program's graph was after its warm-ups).
# The program is recorded twice (RECORDINGS), and each recording's copy time
# per class printed, to show how far two recordings of one program differ.
# One device call (≤ 6 min, .device-bin carried):
#   OUT=$OUT bash experiments/graphs/gpu_graph_flags.sh
set -uo pipefail
T=$(realpath .device-bin/tracer)
R=$(realpath .device-bin/replay)
OUT=${OUT:-/tmp/graph-flags-out}
ROUNDS=${ROUNDS:-2}
VARIANTS=${VARIANTS:-recorded flags0 flags1 flags8}
mkdir -p "$OUT"
{
for k in $(seq 1 "${RECORDINGS:-2}"); do
    rm -rf "/tmp/gf_$k.rec"
    (cd examples && timeout 150 "$T" record --replayable --capture-data -q --force -o "/tmp/gf_$k.rec" -- \
        python3 graphs_inference.py capture --replays 50) > /dev/null 2>&1; echo "record $k exit: $?"
    echo "### recording $k: copies per direction and size (CUPTI)"
    # the recording's trace is plain JSONL (recorded without --compress; the GPU machine has no zstd)
    cat "/tmp/gf_$k.rec/trace.jsonl" | python3 -c '
import sys, json, collections
d = collections.defaultdict(list)
for l in sys.stdin:
    if "\"type\":\"gpu\"" not in l or "\"op\":\"memcpy\"" not in l:
        continue
    j = json.loads(l)
    d[(j["direction"], j["size"])].append(j["duration_us"])
tot = 0.0
for (dr, sz), v in sorted(d.items()):
    tot += sum(v)
    print(f"  {dr} {sz:>10} B x{len(v):<3} {sum(v):10.1f} us")
print(f"  total {tot:.1f} us")'
done
for r in $(seq 1 "$ROUNDS"); do
    echo "### round $r: the program untraced"
    (cd examples && timeout 100 python3 graphs_inference.py capture --replays 50 --time-launches) | grep "per replay"
    for f in $VARIANTS; do
        extra=()
        case $f in
            flags*) extra=(--graph-instantiate-flags "${f#flags}");;
            afterpass) extra=(--graph-build-after-pass);;
        esac
        echo "### round $r: replay --no-cupti ${extra[*]} ($f)"
        timeout 120 "$R" /tmp/gf_1.rec --mode sequence --iterations 3 --warmup 1 --no-cupti --time-graph-launches \
            "${extra[@]}" --report "$OUT/flags_${f}_$r.json" 2>&1 | grep -E "timed with CUDA events|identical|differ|rror|not rebuilt" | head -4
    done
done
} 2>&1 | tee "$OUT/graph_flags.log"
