#!/usr/bin/env bash
# Replay rebuilding the recorded graph execs as CUDA graphs. One
# device call (kind nvidia-h100-x1, as root, from the repo root, with
# .device-bin/{tracer,libtracer_cupti.so,replay} carried: `cargo build
# --release -p tracer -p tracer-cupti -p replay` here, then copy them):
#
#   bash experiments/graphs/gpu_graph_rebuild.sh
#
#  1. experiments/graphs/gpu_explicit_graphs.sh: a driver-API explicit graph (child
#     graph, dependency, 1-D and 2-D memset nodes, a one-row memcpy node, an
#     exec update) recorded with --replayable --gpu-timestamps and replayed both ways;
#  2. GPT-2 captured with torch.cuda.graph and launched 20 times
#     (examples/graphs_inference.py capture), recorded with --replayable
#     --capture-data --gpu-timestamps, replayed with the execs rebuilt
#     (default) and with --expand-graphs: coverage, kernel and busy time per
#     pass and per graph launch (the `run` phase), outputs bit for bit;
#  3. the same for torch.compile(mode="reduce-overhead") decoding
#     (graphs_inference.py decode --impl compiled), batch 1, 8 tokens;
#  4. a torch.cuda.graph capture that forks onto a side stream and joins
#     back (two independent chains of 8 small matmuls, then their sum),
#     launched 20 times: rebuilt, the branches stay parallel (span per
#     launch close to the recording's); as separate launches on one stream
#     they run one after the other.
# The rebuilt replays' reports are kept as NAME_replay_report.json.
set -uo pipefail
T=$(realpath .device-bin/tracer)
R=$(realpath .device-bin/replay)
OUT=${OUT:-/tmp/gr-out}
mkdir -p "$OUT"
log=$OUT/log_graph_rebuild.txt
replay_both() { # $1: recording, $2: name
    for how in rebuilt expanded; do
        extra=(); [ "$how" = expanded ] && extra=(--expand-graphs)
        echo "### replay $2, graphs $how"
        timeout 200 "$R" "$1" --iterations 3 --warmup 1 "${extra[@]}"; echo "replay exit: $?"
        [ "$how" = rebuilt ] && cp "$1/replay-report.json" "$OUT/${2}_replay_report.json" 2>/dev/null
    done
}
{
nvidia-smi -L
echo "## 1. explicit graphs"
OUT=$OUT bash experiments/graphs/gpu_explicit_graphs.sh > /dev/null 2>&1; echo "explicit script exit: $?"
cat "$OUT/log_explicit_graphs.txt"
echo "## 2. GPT-2 captured with torch.cuda.graph, 20 launches"
rm -rf /tmp/g_capture.rec
(cd examples && timeout 150 "$T" record --replayable --capture-data --gpu-timestamps -q --force -o /tmp/g_capture.rec -- python3 graphs_inference.py capture --replays 20); echo "record exit: $?"
"$R" plan /tmp/g_capture.rec | grep -E "launches|graph|captured|coverage"
replay_both /tmp/g_capture.rec capture
echo "## 3. torch.compile reduce-overhead decoding, batch 1, 8 tokens"
rm -rf /tmp/g_compiled.rec
(cd examples && timeout 200 "$T" record --replayable --capture-data --gpu-timestamps -q --force -o /tmp/g_compiled.rec -- python3 graphs_inference.py decode --impl compiled --batch 1 --tokens 8); echo "record exit: $?"
"$R" plan /tmp/g_compiled.rec | grep -E "launches|graph|captured|coverage"
replay_both /tmp/g_compiled.rec compiled
echo "## 4. a capture over two streams (fork and join), 20 launches"
cat > /tmp/fork_join.py <<'PY'
import torch
torch.manual_seed(0)
n = 512
x = torch.randn(n, n, device="cuda", dtype=torch.float16)
w1 = torch.randn(n, n, device="cuda", dtype=torch.float16) / 32
w2 = torch.randn(n, n, device="cuda", dtype=torch.float16) / 32
side = torch.cuda.Stream()
def step():
    side.wait_stream(torch.cuda.current_stream())
    y = x
    for _ in range(8):
        y = y @ w1
    with torch.cuda.stream(side):
        z = x
        for _ in range(8):
            z = z @ w2
    torch.cuda.current_stream().wait_stream(side)
    return y + z
for _ in range(3):  # warm-up outside the graph
    step()
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = step()
for _ in range(20):
    g.replay()
torch.cuda.synchronize()
print("fork/join checksum", float(out.float().sum()))
PY
rm -rf /tmp/g_fork.rec
timeout 150 "$T" record --replayable --capture-data --gpu-timestamps -q --force -o /tmp/g_fork.rec -- python3 /tmp/fork_join.py; echo "record exit: $?"
"$R" plan /tmp/g_fork.rec | grep -E "launches|graph|captured|coverage"
replay_both /tmp/g_fork.rec fork
} > "$log" 2>&1
tail -c 6000 "$log"
