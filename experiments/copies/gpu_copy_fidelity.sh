#!/usr/bin/env bash
# Replayed copies against the recording. Does the recorder
# itself change the copies it records (docs/replay.md, *What the recorder
# costs a copy*)? One device call (kind nvidia-h100-x1, as root from the repo
# root, .device-bin/{tracer,replay,libtracer_cupti.so} carried):
#
#   OUT=$OUT bash experiments/copies/gpu_copy_fidelity.sh
#
# Records the held-out program (examples/graphs_inference.py capture
# --replays 50: GPT-2 built on the CPU and moved to the GPU, 148 pageable
# host-to-device copies of 1.5 KB to 77 MB) ROUNDS times (2) in each of
# MODES (default "replayable cupti"), interleaved:
#   replayable: --replayable --capture-data --gpu-timestamps (what replay needs;
#               the reference of docs/replay.md's fidelity tables)
#   cupti:      --gpu-timestamps only (CUPTI's timeline, no parameter or data capture)
#   params:     --replayable --gpu-timestamps (parameters, no data)
#   cupti-omp1: as cupti, the program with OMP_NUM_THREADS=1
# then replays the first replayable recording --mode sequence and --mode
# timed (--iterations 3 --warmup 1), with BUSY=N once more (sequence) beside N
# busy-looping processes, and prints experiments/copies/copy_sizes.py's
# table of every recording and replay (the first replayable recording is
# the reference column). Logs: $OUT/copy_fidelity.log, the table
# $OUT/copy_sizes.md. BENCH=1: experiments/copies/copy_bench.py instead (below).
# AGAINST=1: both replays compare their copies with every `cupti` recording
# (`replay --copies-against`, repeated: their median and range), and print
# that part of the report.
set -uo pipefail
against=()
T=$(realpath .device-bin/tracer)
R=$(realpath .device-bin/replay)
OUT=${OUT:-/tmp/copy-fidelity-out}
ROUNDS=${ROUNDS:-2}
MODES=${MODES:-replayable cupti}
W=/tmp/copy_fidelity
rm -rf "$W" && mkdir -p "$OUT" "$W"
# replay_modes REC NAME: REC replayed --mode sequence, then --mode timed, each
# --iterations 3 --warmup 1 into $W/NAME_MODE.*; their timelines join `files`.
replay_modes() {
    local rec=$1 name=$2 mode
    for mode in sequence timed; do
        timeout 170 "$R" "$rec" --mode $mode --iterations 3 --warmup 1 --report "$W/${name}_$mode.json" \
            "${against[@]}" > "$W/${name}_$mode.txt" 2>&1
        echo "replay --mode $mode ${against[*]}: exit $?"
        grep -E "copies by host memory|identical|differ" "$W/${name}_$mode.txt" | head -4
        [ ${#against[@]} -eq 0 ] || grep -A12 -i "against" "$W/${name}_$mode.txt" | grep -v "^note" | head -24
        files+=("replay-$mode=$W/${name}_$mode.timeline.jsonl")
    done
}
{
nvidia-smi -L
if [ "${BENCH:-0}" = 1 ]; then
    # BENCH=1: experiments/copies/copy_bench.py instead of GPT-2 (each copy timed with CUDA
    # events in the program itself), untraced, under the recorder with CUPTI only,
    # and under the recorder as replay needs it, ROUNDS times interleaved; then the
    # replayable recording replayed, and copy_sizes.py over the CUPTI sides.
    files=()
    for r in $(seq 1 "$ROUNDS"); do
        echo "### round $r: untraced"
        python3 experiments/copies/copy_bench.py
        echo "### round $r: tracer record --gpu-timestamps"
        timeout 170 "$T" record --gpu-timestamps -q --force -o "$W/bench_cupti_$r.jsonl" -- python3 experiments/copies/copy_bench.py
        files+=("cupti$r=$W/bench_cupti_$r.jsonl")
        echo "### round $r: tracer record --replayable --capture-data --gpu-timestamps"
        timeout 170 "$T" record --replayable --capture-data --gpu-timestamps -q --force -o "$W/bench_rep_$r.rec" -- \
            python3 experiments/copies/copy_bench.py
        files+=("replayable$r=$W/bench_rep_$r.rec/trace.jsonl")
        # OTHER_TRACER=PATH: the same recording made by another build of the tracer
        if [ -n "${OTHER_TRACER:-}" ]; then
            echo "### round $r: $OTHER_TRACER record --replayable --capture-data --gpu-timestamps"
            timeout 170 "$OTHER_TRACER" record --replayable --capture-data --gpu-timestamps -q --force -o "$W/bench_other_$r.rec" -- \
                python3 experiments/copies/copy_bench.py
            files+=("other$r=$W/bench_other_$r.rec/trace.jsonl")
        fi
    done
    replay_modes "$W/bench_rep_1.rec" bench_replay
    python3 experiments/copies/copy_sizes.py --min-bytes 1000 "${files[@]}" | tee "$OUT/copy_sizes.md"
    exit 0
fi
files=()
for r in $(seq 1 "$ROUNDS"); do
    for m in $MODES; do
        case $m in
            replayable) flags=(--replayable --capture-data --gpu-timestamps);;
            cupti) flags=(--gpu-timestamps);;
            params) flags=(--replayable --gpu-timestamps);;
            cupti-omp1) flags=(--gpu-timestamps);;
            *) echo "unknown mode $m"; exit 2;;
        esac
        # cupti-omp1: the program with one OpenMP thread (no pool of CPU threads
        # left spinning after its CPU-side model set-up)
        env=(); [ $m = cupti-omp1 ] && env=(OMP_NUM_THREADS=1)
        rec=$W/${m}_$r.rec
        t0=$(date +%s%N)
        (cd examples && timeout 170 env "${env[@]}" "$T" record "${flags[@]}" -q --force -o "$rec" -- \
            python3 graphs_inference.py capture --replays 50 > /dev/null 2>&1)
        echo "record $m round $r: exit $?, $((($(date +%s%N) - t0) / 1000000)) ms"
        # a replayable recording is a directory; a plain one is the trace itself
        if [ -d "$rec" ]; then files+=("$m$r=$rec/trace.jsonl"); else files+=("$m$r=$rec"); fi
    done
done
first=$W/replayable_1.rec
against=()
if [ "${AGAINST:-0}" = 1 ]; then
    for f in "$W"/cupti_*.rec; do [ -f "$f" ] && against+=(--copies-against "$f"); done
fi
if [ -d "$first" ]; then
    replay_modes "$first" replay
    # BUSY=N: the sequence replay once more beside N busy-looping processes
    if [ "${BUSY:-0}" -gt 0 ]; then
        pids=()
        for _ in $(seq 1 "$BUSY"); do (while :; do :; done) & pids+=($!); done
        timeout 170 "$R" "$first" --mode sequence --iterations 3 --warmup 1 --report "$W/replay_busy.json" \
            > "$W/replay_busy.txt" 2>&1
        echo "replay --mode sequence beside $BUSY busy processes: exit $?"
        kill "${pids[@]}" 2>/dev/null
        grep -E "copies by host memory" "$W/replay_busy.txt" | head -2
        files+=("replay-busy$BUSY=$W/replay_busy.timeline.jsonl")
    fi
fi
python3 experiments/copies/copy_sizes.py "${files[@]}" | tee "$OUT/copy_sizes.md"
} 2>&1 | tee "$OUT/copy_fidelity.log"
