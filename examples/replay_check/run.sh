#!/bin/bash
# On a GPU machine with CUDA (nvcc): build replay_check, run it (it writes the
# recording), finish the recording, then replay it. REPLAY: the replay binary
# (built elsewhere: cargo build --release -p replay). OUT: where to put the
# reports and the recording.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
REPLAY=${REPLAY:-$here/../../target/release/replay}
OUT=${OUT:-$here/out}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
mkdir -p "$OUT"
work=$(mktemp -d)
rec=$work/replay_check.rec
mkdir -p "$rec"
set -x
"$NVCC" -O2 -arch=sm_90 -o "$work/replay_check" "$here/replay_check.cu" || exit 1
"$NVCC" -O2 -arch=sm_90 -fatbin -o "$work/replay_check.fatbin" "$here/replay_check.cu" || exit 1
"$work/replay_check" "$rec" || exit 1
python3 "$here/make_recording.py" "$rec" "$work/replay_check.fatbin" || exit 1
"$REPLAY" plan "$rec"
"$REPLAY" "$rec" --mode sequence,isolated,graph,timed --iterations 5 --warmup 2 --energy-seconds 3
echo "replay exit: $?"
cp "$rec/replay-report.json" "$OUT/replay-report.json"
"$REPLAY" "$rec" --mode sequence --iterations 3 --force-relocation --report "$OUT/replay-report-relocated.json"
echo "replay --force-relocation exit: $?"
tar -C "$work" --exclude replay-report.json -czf "$OUT/replay_check.rec.tgz" replay_check.rec
