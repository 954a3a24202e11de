#!/usr/bin/env bash
# Stacks on the GPU machine (one device call, ~6 min): which code kept the GPU waiting.
#   1. a held-out C program on the driver API (c_launcher.c, frame pointers): its launches
#      and its idle gaps (blocked in read on a pipe, computing) attributed to its functions;
#   2. a PyTorch CNN training loop whose loader reads and decodes image shards from disk in
#      the training thread (train_loader.py, shard_reader.py): gaps, report, HTML, pprof;
#   4. (PARTS="4") the training loop again with --gpu-timestamps: measured gaps;
#   3. the per-call cost of stacks: --bpf-stats runs with, without and with all launches' stacks on GPT-2
#      generation (examples/transformer_inference.py) and on the training loop.
#   bash experiments/stacks/gpu_stacks.sh          (binaries in .device-bin/, results in $OUT)
#   PARTS="2 3" COST_MODES="stacks nostacks" bash experiments/stacks/gpu_stacks.sh   (a subset)
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
parts=" ${PARTS:-1 2 3} "
part() { case $parts in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
python3 --version | tee -a "$out/gpu.txt"

if part 1; then
log "1. C program"
gcc -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -I/usr/local/cuda/include \
  "$st/c_launcher.c" -o "$work/c_launcher" -L/usr/local/nvidia/lib64 -lcuda -lpthread 2>&1 | tail -3
timeout 60 "$tracer" record -q -o "$work/c.jsonl" -- "$work/c_launcher" 50; log "rc=$?"
{ "$tracer" gaps "$work/c.jsonl"; "$tracer" report "$work/c.jsonl"; } > "$work/c.txt" 2>&1
"$tracer" export "$work/c.jsonl" --format pprof -o "$work/c.pb.gz" 2>&1 | tail -2
cp "$work/c.txt" "$out/attribution_c.txt"
fi

if part 2; then
log "2. training loop with a file-reading loader"
timeout 150 "$tracer" record -q -o "$work/train.jsonl" -- python3 "$st/train_loader.py" --steps 40 \
  > "$work/train.stdout" 2>&1; log "rc=$?"; tail -2 "$work/train.stdout"
{ "$tracer" gaps "$work/train.jsonl"; "$tracer" report "$work/train.jsonl"; } > "$work/train.txt" 2>&1
"$tracer" gaps --json "$work/train.jsonl" > "$work/train.gaps.json" 2>&1
"$tracer" report --html "$work/train.html" "$work/train.jsonl" > /dev/null 2>&1 || log "html rc=$?"
"$tracer" export "$work/train.jsonl" --format pprof -o "$work/train.pb.gz" 2>&1 | tail -2
cp "$work/train.txt" "$out/attribution_train.txt"
zstd -q -19 "$work/train.jsonl" -o "$out/train.jsonl.zst" 2>/dev/null || gzip -c "$work/train.jsonl" > "$out/train.jsonl.gz"
fi

if part 4; then
# The bound timeline of part 2 proves no per-step gap: cuDNN's two memsets on its own
# non-blocking streams are never synchronized until the last cuCtxSynchronize, so each
# step's idle time is unknown, not certain. Measured GPU activity shows the gaps.
log "4. the training loop with --gpu-timestamps (measured gaps)"
timeout 150 "$tracer" record -q --gpu-timestamps -o "$work/train_ts.jsonl" -- python3 "$st/train_loader.py" --steps 40 \
  > "$work/train_ts.stdout" 2>&1; log "rc=$?"; tail -2 "$work/train_ts.stdout"
{ "$tracer" gaps "$work/train_ts.jsonl"; "$tracer" report "$work/train_ts.jsonl"; } > "$work/train_ts.txt" 2>&1
cp "$work/train_ts.txt" "$out/attribution_train_ts.txt"
zstd -q -19 "$work/train_ts.jsonl" -o "$out/train_ts.jsonl.zst" 2>/dev/null || gzip -c "$work/train_ts.jsonl" > "$out/train_ts.jsonl.gz"
fi

if part 3; then
log "3. per-call cost: --bpf-stats with and without stacks"
gen="python3 $here/examples/transformer_inference.py --iterations 3"
modes=${COST_MODES:-stacks nostacks allstacks}
for m in $modes; do
  opt=""; [ $m = nostacks ] && opt=--no-stacks; [ $m = allstacks ] && opt=--all-launch-stacks
  # shellcheck disable=SC2086
  timeout 150 "$tracer" record -q --force --bpf-stats $opt -o "$work/gen_$m.jsonl" -- $gen > "$work/gen_$m.stdout" 2>&1; log "gen $m rc=$?"
  # shellcheck disable=SC2086
  [ $m = allstacks ] || timeout 150 "$tracer" record -q --force --bpf-stats $opt -o "$work/train_$m.jsonl" -- python3 "$st/train_loader.py" --steps 40 > /dev/null 2>&1; log "train $m rc=$?"
done
pairs=""
for p in gen_stacks:gen_nostacks gen_allstacks:gen_nostacks train_stacks:train_nostacks; do
  [ -f "$work/${p%:*}.jsonl" ] && [ -f "$work/${p#*:}.jsonl" ] && pairs="$pairs $work/${p%:*}.jsonl $work/${p#*:}.jsonl"
done
# shellcheck disable=SC2086
python3 "$st/stack_cost.py" $pairs | tee "$out/cost_table.txt"
fi
cat "$work/c.txt" "$work/train.txt" > "$out/attribution.txt" 2>/dev/null
tar -C "$work" -czf "$out/traces.tgz" c.jsonl train.jsonl c.pb.gz train.pb.gz train.html train.gaps.json 2>/dev/null
grep -iE "held|blocked|load_batch|read_shard|decode_images|wait_for_input|cpu_work|launch_step" "$out/attribution.txt" | head -40
log "done"
