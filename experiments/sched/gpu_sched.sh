#!/usr/bin/env bash
# Why the GPU waited, on the GPU machine (one device call, ~7 min; issue 33), down to the
# operating system.
#   1. a data-loader training loop that reads files between steps (examples/dataloader_training.py);
#   2. GPT-2 generation pinned to two cores with two CPU hogs (`yes`) on the same cores, and
#      the same run without the hogs;
#   3. the cost of the scheduler events on GPT-2 generation: ROUNDS interleaved rounds of
#      untraced / tracer --no-sched / tracer (sched on), ITER generation iterations each, and
#      the sched programs' own run time (--bpf-stats) per switch.
#   bash experiments/sched/gpu_sched.sh [ROUNDS] [ITER]      (binaries in .device-bin/, results in $OUT)
set -uo pipefail
rounds=${1:-8}
iters=${2:-8}
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=$here/.device-bin
out=${OUT:-/tmp/gpu_sched}
mkdir -p "$out"
log() { echo "[$(date +%T)] $*" | tee -a "$out/log.txt"; }
ex=$here/examples
tracer=$bin/tracer
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
uname -r | tee -a "$out/gpu.txt"

log "1. data loader"
timeout 150 "$tracer" record -q -o "$out/dataloader.jsonl" -- python3 "$ex/dataloader_training.py" --steps 30 \
  > "$out/dataloader.stdout" 2> "$out/dataloader.stderr"; log "rc=$?"
"$tracer" gaps "$out/dataloader.jsonl" > "$out/dataloader.gaps.txt" 2>&1
"$tracer" gaps --json "$out/dataloader.jsonl" > "$out/dataloader.gaps.json" 2>&1
grep -A12 "what the launching threads" "$out/dataloader.gaps.txt" | head -30

log "2. GPT-2 generation on cores 0-1, alone and beside two CPU hogs"
gen="python3 $ex/transformer_inference.py --iterations 5"
timeout 120 "$tracer" record -q -o "$out/gpt2_alone.jsonl" -- taskset -c 0,1 $gen > "$out/gpt2_alone.stdout" 2>&1; log "rc=$?"
taskset -c 0,1 yes > /dev/null & h1=$!
taskset -c 0,1 yes > /dev/null & h2=$!
timeout 120 "$tracer" record -q -o "$out/gpt2_hog.jsonl" -- taskset -c 0,1 $gen > "$out/gpt2_hog.stdout" 2>&1; log "rc=$? (hogs $h1 $h2)"
kill $h1 $h2; wait $h1 $h2 2>/dev/null
for r in alone hog; do
  "$tracer" gaps "$out/gpt2_$r.jsonl" > "$out/gpt2_$r.gaps.txt" 2>&1
  "$tracer" gaps --json "$out/gpt2_$r.jsonl" > "$out/gpt2_$r.gaps.json" 2>&1
  echo "== gpt2 $r"; grep "iteration\]" "$out/gpt2_$r.stdout" | tail -2
  grep -A8 "what the launching threads" "$out/gpt2_$r.gaps.txt" | head -10
done

log "3. cost: $rounds rounds x (untraced, --no-sched, sched), $iters iterations each"
times=$out/cost_times.txt; : > "$times"
run() { # mode cmd... ; appends "round mode seconds" per generation iteration
  local r=$1 m=$2; shift 2
  timeout 120 "$@" python3 "$ex/transformer_inference.py" --iterations "$iters" 2>/dev/null \
    | awk -v m="$m" -v r="$r" '/^\[iteration/ {sub("s,","",$3); print r, m, $3}' >> "$times"
}
for r in $(seq "$rounds"); do
  # The order rotates each round.
  case $((r % 3)) in
    0) order="untraced nosched sched" ;; 1) order="nosched sched untraced" ;; *) order="sched untraced nosched" ;;
  esac
  for m in $order; do
    case $m in
      untraced) run "$r" untraced env ;;
      nosched) run "$r" nosched "$tracer" record -q --force --no-sched -o "$out/cost.jsonl" -- ;;
      sched) run "$r" sched "$tracer" record -q --force -o "$out/cost.jsonl" -- ;;
    esac
  done
done
log "bpf-stats run"
timeout 120 "$tracer" record -q --force --bpf-stats -o "$out/cost_bpfstats.jsonl" -- python3 "$ex/transformer_inference.py" --iterations "$iters" > /dev/null 2>&1; log "rc=$?"
python3 "$here/experiments/sched/sched_cost.py" "$times" "$out/cost_bpfstats.jsonl" | tee "$out/cost_table.txt"
log "done"
