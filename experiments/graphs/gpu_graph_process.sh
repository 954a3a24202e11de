#!/usr/bin/env bash
# What in replay's process makes the rebuilt graph launches ~100 µs (+12.6 %) slower than
# the program's own graph, with the same nodes, edges, attributes, flags and
# kernel handles (docs/replay.md, "Which process runs the graph"). Finds
# what in replay's process makes the difference.
#
# 1. A microbenchmark without PyTorch (experiments/graphs/graph_process/): a chain of
#    NODES elementwise kernels captured into a graph and launched 50 times
#    back to back, each launch timed with CUDA events, built two ways:
#    through the CUDA runtime (graph_chain_rt, also with a 1 KiB parameter
#    struct: `big`) and through the driver API only, as replay does
#    (graph_chain_drv: cuLibraryLoadFromFile, cuLibraryGetKernel, `extra` or
#    kernelParams), each launched on the legacy default stream and on a
#    created stream, and the driver one once more with the CUDA runtime
#    initializing the primary context first (LD_PRELOAD runtime_first.so:
#    cudaFree(0) before main). MICRO_ROUNDS rounds (default ROUNDS).
# 1b. The microbenchmark recorded (--replayable) and replayed, with small
#    and 1 KiB parameters (MICRO_KINDS, default "small big").
# 1c. TORCH_KINDS (e.g. "elementwise gemm layernorm mix"): chains of PyTorch
#    ops (torch_chain.py), untraced and replayed. REPLAY_VARIANTS: replay as
#    is (default), with every window moved (relocate), on cuMemAlloc windows
#    (malloc), rebuilt as one chain (chain), built after a pass (afterpass),
#    paced as recorded (timed: --mode timed besides sequence), without some
#    ops of its passes (skip=KIND[@STREAM],…: replay --skip-ops, e.g.
#    skip=launch@1), with each graph refreshed before its first launch in a
#    pass (refresh=upload, refresh=instantiate: replay --graph-refresh). For
#    MIN_KINDS among them also graph_replay_min, the smallest driver-only
#    replay of the captured launches (graph_spec.py writes what it reads),
#    in each of MIN_VARIANTS: library, module, preserved (how the images are
#    loaded); streams (every stream the program created), other (the images
#    the graph does not use), pinned (64 MiB page-locked), all; warm=WHERExN
#    (the launches run N times before the timed graph launches, WHERE: cap,
#    side, sideblocking, sidehigh, legacy, recorded: the program's own
#    launches before its capture), prefixed by streams+, destroy+ (the
#    capture stream destroyed), rounds+ (warm-up and timing three times),
#    all+; seq (the program's own work outside its capture in recorded
#    order, streams and events as recorded: replay's pass without replay),
#    seq-skip=KIND,… (the same without launch, record, wait, sync or
#    launch@STREAM-HANDLE; SIDE stands for the program's first stream,
#    CAPSTREAM for the one it captured on), seq5 (five passes), seq-prog and seq-prog-skip=… (timed by the program's own
#    event records instead of events around each launch), seq-defstreams (the
#    program's streams non-blocking, priority 0), rounds5+warm=… (five rounds),
#    seq:K=V:K=V… (MIN_SEQUENCE with MIN_SEQ_K=V…, e.g. seq:REBUILD=instantiate;
#    a K starting with MIN_ is passed as it is, e.g. seq:MIN_MALLOC=1),
#    rtfirst-seq (seq with the CUDA runtime setting up the context first).
#    REPLAY_ITERATIONS: replay's iterations (3). PAIR_TIMING=1: the program
#    once more, each launch timed by events before and after it (as replay).
#    PHASES=N: the program once more, its warm-up and timed graph launches
#    run N times (as replay's passes run them), and again with kernels on the
#    legacy and another stream before each later warm-up (MULTI, default 1:
#    CHAIN_MULTI values, e.g. "1 legacy other"). CONNECTIONS="1 32": the
#    program, replay and the minimal sequence replay with
#    CUDA_DEVICE_MAX_CONNECTIONS set to each. CLOCKS=1: the GPU's clocks sampled during 1c
#    (nvidia-smi, 10 ms), per run.
# 2. The held-out program (graphs_inference.py capture --replays 50
#    --time-launches) untraced, and replay of its recording (--no-cupti
#    --time-graph-launches) without and with runtime_first.so preloaded
#    (PROGRAM=0 leaves this part out; PROGRAM_VARIANTS: plain, runtime_first,
#    refresh=upload, refresh=instantiate).
# ROUNDS interleaved rounds (default 3). One device call (.device-bin carried), e.g.
#   OUT=$OUT bash experiments/graphs/gpu_graph_process.sh
#   MICRO_ROUNDS=0 MICRO_KINDS= TORCH_KINDS=elementwise MIN_KINDS=elementwise \
#     MIN_VARIANTS="warm=recordedx1" REPLAY_VARIANTS="default skip=launch@1" \
#     ROUNDS=1 PROGRAM=0 OUT=$OUT bash experiments/graphs/gpu_graph_process.sh
set -uo pipefail
R=$(realpath .device-bin/replay)
T=$(realpath .device-bin/tracer)
OUT=${OUT:-/tmp/graph-process-out}
ROUNDS=${ROUNDS:-3}
NODES=${NODES:-294}
mkdir -p "$OUT"
B=/tmp/graph_process
mkdir -p $B
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
{
echo "### $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); nvcc: $($NVCC --version | tail -1)"
S=experiments/graphs/graph_process
$NVCC -O2 -arch=sm_90 -cubin -o $B/kern.cubin $S/kern.cu &&
$NVCC -O2 -arch=sm_90 -o $B/rt $S/graph_chain_rt.cu &&
$NVCC -O2 -cudart none -o $B/drv $S/graph_chain_drv.cpp -lcuda &&
$NVCC -O2 -shared -Xcompiler -fPIC -cudart static -o $B/runtime_first.so $S/runtime_first.cpp &&
$NVCC -O2 -cudart none -o $B/min $S/graph_replay_min.cpp -lcuda || { echo "build failed"; exit 1; }
echo "### the driver-only binary's libraries: $(ldd $B/drv | awk '{print $1}' | tr '\n' ' ')"
for r in $(seq 1 "${MICRO_ROUNDS:-$ROUNDS}"); do
    echo "### microbenchmark round $r"
    for st in legacy created; do
        $B/rt "$NODES" 50 $st 0x9
        $B/rt "$NODES" 50 $st 0x9 big
        $B/drv $B/kern.cubin "$NODES" 50 $st 0x9
        $B/drv $B/kern.cubin "$NODES" 50 $st 0x9 params
        LD_PRELOAD=$B/runtime_first.so $B/drv $B/kern.cubin "$NODES" 50 $st 0x9 2>/dev/null
    done
done
# 1b. The microbenchmark recorded and replayed: replay's rebuilt graph of
#     the same kernels, against the program's own graph (above).
MICRO_KINDS=${MICRO_KINDS-small big}
for kind in $MICRO_KINDS; do
    rm -rf /tmp/m_$kind.rec
    arg=(); [ $kind = big ] && arg=(big)
    timeout 120 "$T" record --replayable --capture-data -q --force -o /tmp/m_$kind.rec -- \
        $B/rt "$NODES" 50 legacy 0x9 "${arg[@]}" 2>&1 | grep -E "median|rror" | sed "s/^/recorded: /"
done
for r in $(seq 1 "$ROUNDS"); do
    for kind in $MICRO_KINDS; do
        arg=(); [ $kind = big ] && arg=(big)
        $B/rt "$NODES" 50 legacy 0x9 "${arg[@]}"
        echo "replay of the $kind-parameter chain:"
        timeout 120 "$R" /tmp/m_$kind.rec --mode sequence --iterations 3 --warmup 1 --no-cupti --time-graph-launches \
            --report "$OUT/micro_${kind}_$r.json" 2>&1 | grep -E "timed with CUDA events|rror|not rebuilt" | head -3
    done
done
# 1c. Chains of PyTorch ops (experiments/graphs/graph_process/torch_chain.py), each
#     untraced and replayed: which kernels does a rebuilt graph run slower?
for kind in ${TORCH_KINDS:-}; do
    rm -rf /tmp/t_$kind.rec
    timeout 120 "$T" record --replayable --capture-data -q --force -o /tmp/t_$kind.rec -- \
        python3 $S/torch_chain.py $kind 2>&1 | grep -E "median|rror" | sed "s/^/recorded: /"
done
for kind in ${MIN_KINDS:-}; do
    python3 $S/graph_spec.py /tmp/t_$kind.rec > /tmp/t_$kind.spec
done
# CLOCKS=1: the GPU's clocks sampled every 10 ms (nvidia-smi) during 1c, summed up per run
# below (the SM clock idles at 345 MHz on these H100s and boosts to ~1980 MHz under load).
mark() { echo "MARK $(date +%s.%N) $*" | tee -a "$OUT/marks.txt"; }
if [ "${CLOCKS:-0}" = 1 ]; then
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,clocks_event_reasons.active \
        --format=csv,noheader -lms 10 > "$OUT/clocks.csv" 2>&1 &
    SMI=$!
fi
for r in $(seq 1 "$ROUNDS"); do
    for kind in ${TORCH_KINDS:-}; do
        mark "program $kind"
        python3 $S/torch_chain.py $kind
        if [ -n "${PHASES:-}" ]; then
            mark "program $PHASES phases $kind"
            CHAIN_PHASES=$PHASES python3 $S/torch_chain.py $kind
            for multi in ${MULTI:-1}; do
                mark "program $PHASES phases, later ones with kernels on more streams ($multi), $kind"
                echo "later warm-ups with kernels on more streams ($multi):"
                CHAIN_MULTI=$multi CHAIN_PHASES=$PHASES python3 $S/torch_chain.py $kind
            done
        fi
        if [ "${PAIR_TIMING:-0}" = 1 ]; then
            mark "program pair-timed $kind"
            CHAIN_TIMING=pair python3 $S/torch_chain.py $kind
        fi
        for v in ${REPLAY_VARIANTS:-default}; do
            extra=()
            case $v in
                relocate) extra=(--force-relocation);;
                malloc) extra=(--device-memory malloc);;
                chain) extra=(--graph-chain);;
                afterpass) extra=(--graph-build-after-pass);;
                timed) extra=(--mode timed);;
            esac
            case $v in skip=*) extra=(--skip-ops "${v#skip=}");; refresh=*) extra=(--graph-refresh "${v#refresh=}");; esac
            mark "replay $v $kind"
            echo "replay ($v) of the torch $kind chain:"
            timeout 120 "$R" /tmp/t_$kind.rec --mode sequence --iterations "${REPLAY_ITERATIONS:-3}" --warmup 1 --no-cupti \
                --time-graph-launches "${extra[@]}" --report "$OUT/torch_${kind}_${v//[^a-z0-9]/_}_$r.json" 2>&1 | grep -E "^pass |timed with CUDA events|rror|not rebuilt" | head -14
        done
        case " ${MIN_KINDS:-} " in *" $kind "*)
            # SIDE in a variant: the handle of the program's first created stream (its warm-up's)
            side=$(awk '$1 == "seqstream" {print $2; exit}' /tmp/t_$kind.spec)
            # CAPSTREAM: the stream the program captured its graph on
            capst=$(awk '$1 == "seq" && $2 == "capture" {print $3; exit}' /tmp/t_$kind.spec)
            for m in ${MIN_VARIANTS:-library module preserved}; do
                m=${m//SIDE/$side}; m=${m//CAPSTREAM/$capst}
                env=(); args=(library)
                case $m in
                    module) args=(module);;
                    preserved) args=(library preserved);;
                    streams) env=(MIN_STREAMS=1);;
                    other) env=(MIN_OTHER_IMAGES=1);;
                    pinned) env=(MIN_PINNED=$((64 << 20)));;
                    all) env=(MIN_STREAMS=1 MIN_OTHER_IMAGES=1 MIN_PINNED=$((64 << 20)));;
                    warm=*) w=${m#warm=}; env=(MIN_WARM=${w%x*} MIN_WARM_REPEAT=${w#*x});;
                    destroy+warm=*) w=${m#destroy+warm=}; env=(MIN_DESTROY_CAP=1 MIN_WARM=${w%x*} MIN_WARM_REPEAT=${w#*x});;
                    seq) env=(MIN_SEQUENCE=1);;
                    seq-skip=*) env=(MIN_SEQUENCE=1 MIN_SEQ_SKIP=${m#seq-skip=});;
                    seq5) env=(MIN_SEQUENCE=1 MIN_SEQ_PASSES=5);;
                    rtfirst-seq) env=(LD_PRELOAD=$B/runtime_first.so MIN_SEQUENCE=1);;
                    seq:*) env=(MIN_SEQUENCE=1); IFS=: read -ra kv <<< "${m#seq:}"; for x in "${kv[@]}"; do case $x in MIN_*) env+=("$x");; *) env+=("MIN_SEQ_$x");; esac; done;;
                    seq-prog) env=(MIN_SEQUENCE=1 MIN_SEQ_TIMING=program);;
                    seq-prog-skip=*) env=(MIN_SEQUENCE=1 MIN_SEQ_TIMING=program MIN_SEQ_SKIP=${m#seq-prog-skip=});;
                    seq-defstreams) env=(MIN_SEQUENCE=1 MIN_SEQ_DEFAULT_STREAMS=1);;
                    rounds5+warm=*) w=${m#rounds5+warm=}; env=(MIN_ROUNDS=5 MIN_WARM=${w%x*} MIN_WARM_REPEAT=${w#*x});;
                    rounds+warm=*) w=${m#rounds+warm=}; env=(MIN_ROUNDS=3 MIN_WARM=${w%x*} MIN_WARM_REPEAT=${w#*x});;
                    all+warm=*) w=${m#all+warm=}; env=(MIN_DESTROY_CAP=1 MIN_STREAMS=1 MIN_OTHER_IMAGES=1 MIN_WARM=${w%x*} MIN_WARM_REPEAT=${w#*x});;
                    streams+warm=*) w=${m#streams+warm=}; env=(MIN_STREAMS=1 MIN_WARM=${w%x*} MIN_WARM_REPEAT=${w#*x});;
                esac
                mark "minimal $m $kind"
                timeout 60 env "${env[@]}" $B/min /tmp/t_$kind.spec "${args[@]}"
            done;;
        esac
    done
done
# CONNECTIONS="1 32": the program (PHASES phases), replay and the minimal
# replay of its sequence once more with CUDA_DEVICE_MAX_CONNECTIONS set (how
# many hardware work queues the context's streams are spread over; 8 unless set).
for c in ${CONNECTIONS:-}; do
    for kind in ${TORCH_KINDS:-}; do
        echo "### CUDA_DEVICE_MAX_CONNECTIONS=$c, $kind"
        CUDA_DEVICE_MAX_CONNECTIONS=$c CHAIN_PHASES=${PHASES:-1} python3 $S/torch_chain.py $kind
        CUDA_DEVICE_MAX_CONNECTIONS=$c timeout 120 "$R" /tmp/t_$kind.rec --mode sequence --iterations 3 --warmup 1 --no-cupti \
            --time-graph-launches --report "$OUT/torch_${kind}_connections_$c.json" 2>&1 | grep -E "^pass |rror" | sed "s/^/replay: /"
        case " ${MIN_KINDS:-} " in *" $kind "*)
            CUDA_DEVICE_MAX_CONNECTIONS=$c MIN_SEQUENCE=1 timeout 60 $B/min /tmp/t_$kind.spec library | grep -v "^sequence:";;
        esac
    done
done
mark "end" > /dev/null
if [ "${CLOCKS:-0}" = 1 ]; then
    kill $SMI
    python3 - "$OUT/clocks.csv" "$OUT/marks.txt" <<'PY'
import sys
sys.path.insert(0, "experiments/colocation")
import smi_csv
# clocks.sm, clocks.mem, power.draw, clocks_event_reasons.active
rows = []
for t, f in smi_csv.samples(sys.argv[1]):
    try:
        rows.append((t, int(smi_csv.number(f[0])), smi_csv.number(f[2]), f[3]))
    except (ValueError, IndexError):
        pass
marks = smi_csv.marks(sys.argv[2])
print("run: samples; SM clock p10/median/p90 MHz over the samples above 100 W (the GPU at work); reasons seen")
for (a, name), (b, _) in zip(marks, marks[1:]):
    s = [r for r in rows if a <= r[0] < b and r[2] > 100]
    if s:
        c = sorted(r[1] for r in s)
        print(f"  {name:36s} n={len(s):4d} SM {c[len(c) // 10]}/{c[len(c) // 2]}/{c[len(c) * 9 // 10]}  {sorted({r[3] for r in s})}")
PY
fi
[ "${PROGRAM:-1}" = 1 ] || exit 0
rm -rf /tmp/gp.rec
(cd examples && timeout 150 "$T" record --replayable --capture-data -q --force -o /tmp/gp.rec -- \
    python3 graphs_inference.py capture --replays 50) > /dev/null 2>&1; echo "### record exit: $?"
for r in $(seq 1 "$ROUNDS"); do
    echo "### round $r: the program untraced"
    (cd examples && timeout 100 python3 graphs_inference.py capture --replays 50 --time-launches) | grep "per replay"
    for v in ${PROGRAM_VARIANTS:-plain runtime_first}; do
        pre=(); extra=()
        [ $v = runtime_first ] && pre=(env LD_PRELOAD=$B/runtime_first.so)
        case $v in refresh=*) extra=(--graph-refresh "${v#refresh=}");; esac
        echo "### round $r: replay --no-cupti ($v)"
        timeout 120 "${pre[@]}" "$R" /tmp/gp.rec --mode sequence --iterations 3 --warmup 1 --no-cupti --time-graph-launches \
            "${extra[@]}" --report "$OUT/process_${v//[^a-z0-9]/_}_$r.json" 2>&1 | grep -E "runtime_first|timed with CUDA events|identical|differ|rror|not rebuilt" | head -5
    done
done
} 2>&1 | tee "$OUT/graph_process.log"
