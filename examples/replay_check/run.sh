#!/bin/bash
# On a GPU machine with CUDA (nvcc, sm_90): build replay_check, run it (it
# writes the recording), finish the recording, then replay it. REPLAY: the
# replay binary (built elsewhere: cargo build --release -p replay). OUT: where
# the reports go.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
REPLAY=${REPLAY:-$here/../../target/release/replay}
OUT=${OUT:-$here/out}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
SRC=${SRC:-$here/replay_check.cu}
mkdir -p "$OUT"
work=$(mktemp -d)
rec=$work/replay_check.rec
mkdir -p "$rec"
set -x
"$NVCC" -O2 -arch=sm_90 -o "$work/replay_check" "$SRC" || exit 1
"$NVCC" -O2 -arch=sm_90 -fatbin -o "$work/replay_check.fatbin" "$SRC" || exit 1
# 1. The chain once on 2^20 elements: outputs checked bit for bit, every mode.
"$work/replay_check" "$rec" || exit 1
python3 "$here/make_recording.py" "$rec" "$work/replay_check.fatbin" || exit 1
"$REPLAY" plan "$rec"
"$REPLAY" "$rec" --mode sequence,isolated,graph,timed --iterations 5 --warmup 2 --energy-seconds 3
echo "replay exit: $?"
cp "$rec/replay-report.json" "$OUT/replay-report.json"
# 2. The same with every pointer relocated.
"$REPLAY" "$rec" --mode sequence --iterations 3 --force-relocation --report "$OUT/replay-report-relocated.json"
echo "replay --force-relocation exit: $?"
# 3. Energy: the chain 10000 times on 2^24 elements (~2.5 s of GPU work), with NVML power lines.
mkdir -p "$work/energy.rec"
"$work/replay_check" "$work/energy.rec" 10000 24 && python3 "$here/make_recording.py" "$work/energy.rec" "$work/replay_check.fatbin" &&
    "$REPLAY" "$work/energy.rec" --mode sequence,isolated --iterations 2 --warmup 1 --energy-seconds 3 --report "$OUT/replay-report-energy.json"
echo "energy replay exit: $?"
# 4. Recorded and replayed with ASLR off: do the windows land at the recorded addresses?
mkdir -p "$work/noaslr.rec"
setarch "$(uname -m)" -R "$work/replay_check" "$work/noaslr.rec" && python3 "$here/make_recording.py" "$work/noaslr.rec" "$work/replay_check.fatbin" &&
    setarch "$(uname -m)" -R "$REPLAY" "$work/noaslr.rec" --mode sequence --iterations 1 --warmup 0 --report "$OUT/replay-report-noaslr.json"
echo "no-ASLR replay exit: $?"
