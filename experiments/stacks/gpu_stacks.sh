#!/usr/bin/env bash
# Stacks on the GPU machine (one device call, ~6 min): which code kept the GPU waiting.
#   1. a held-out C program on the driver API (c_launcher.c, frame pointers): its launches
#      and its idle gaps (blocked in read on a pipe, computing) attributed to its functions;
#   2. a PyTorch CNN training loop whose loader reads and decodes image shards from disk in
#      the training thread (train_loader.py, shard_reader.py): gaps, report, HTML, pprof;
#   3. the per-call cost of stacks: --bpf-stats runs with, without and with all launches' stacks on GPT-2
#      generation (examples/transformer_inference.py) and on the training loop.
#   bash experiments/stacks/gpu_stacks.sh          (binaries in .device-bin/, results in $OUT)
# Binaries: cargo build --release -p tracer && mkdir -p .device-bin && cp target/release/tracer .device-bin/
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# The binaries may come as one archive (the tree and the binaries together exceed what travels).
if [ ! -x "$here/.device-bin/tracer" ] && [ -f "$here/.device-bin/bins.tar.xz" ]; then
  tar -C "$here/.device-bin" -xJf "$here/.device-bin/bins.tar.xz"
fi
tracer=$here/.device-bin/tracer
out=${OUT:-/tmp/gpu_stacks}
work=$(mktemp -d)
mkdir -p "$out"
log() { echo "[$(date +%T)] $*" | tee -a "$out/log.txt"; }
st=$here/experiments/stacks
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
python3 --version | tee -a "$out/gpu.txt"

log "1. C program"
gcc -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -I/usr/local/cuda/include \
  "$st/c_launcher.c" -o "$work/c_launcher" -L/usr/local/nvidia/lib64 -lcuda -lpthread 2>&1 | tail -3
timeout 60 "$tracer" record -q -o "$work/c.jsonl" -- "$work/c_launcher" 50; log "rc=$?"
{ "$tracer" gaps "$work/c.jsonl"; "$tracer" report "$work/c.jsonl"; } > "$work/c.txt" 2>&1
"$tracer" export "$work/c.jsonl" --format pprof -o "$work/c.pb.gz" 2>&1 | tail -2

log "2. training loop with a file-reading loader"
timeout 150 "$tracer" record -q -o "$work/train.jsonl" -- python3 "$st/train_loader.py" --steps 40 \
  > "$work/train.stdout" 2>&1; log "rc=$?"; tail -2 "$work/train.stdout"
{ "$tracer" gaps "$work/train.jsonl"; "$tracer" report "$work/train.jsonl"; } > "$work/train.txt" 2>&1
"$tracer" gaps --json "$work/train.jsonl" > "$work/train.gaps.json" 2>&1
"$tracer" report --html "$work/train.html" "$work/train.jsonl" > /dev/null 2>&1 || log "html rc=$?"
"$tracer" export "$work/train.jsonl" --format pprof -o "$work/train.pb.gz" 2>&1 | tail -2

log "3. per-call cost: --bpf-stats with and without stacks"
gen="python3 $here/examples/transformer_inference.py --iterations 3"
for m in stacks nostacks allstacks; do
  opt=""; [ $m = nostacks ] && opt=--no-stacks; [ $m = allstacks ] && opt=--all-launch-stacks
  # shellcheck disable=SC2086
  timeout 150 "$tracer" record -q --force --bpf-stats $opt -o "$work/gen_$m.jsonl" -- $gen > "$work/gen_$m.stdout" 2>&1; log "gen $m rc=$?"
  # shellcheck disable=SC2086
  [ $m = allstacks ] || timeout 150 "$tracer" record -q --force --bpf-stats $opt -o "$work/train_$m.jsonl" -- python3 "$st/train_loader.py" --steps 40 > /dev/null 2>&1; log "train $m rc=$?"
done
python3 "$st/stack_cost.py" "$work"/gen_stacks.jsonl "$work"/gen_nostacks.jsonl "$work"/gen_allstacks.jsonl "$work"/gen_nostacks.jsonl \
  "$work"/train_stacks.jsonl "$work"/train_nostacks.jsonl \
  | tee "$out/cost_table.txt"
cat "$work/c.txt" "$work/train.txt" > "$out/attribution.txt"
tar -C "$work" -czf "$out/traces.tgz" c.jsonl train.jsonl c.pb.gz train.pb.gz train.html train.gaps.json 2>/dev/null
grep -iE "held|blocked|load_batch|read_shard|decode_images|wait_for_input|cpu_work|launch_step" "$out/attribution.txt" | head -40
log "done"
