#!/usr/bin/env bash
# One device call (kind nvidia-h100-x1 or -x2, as root, from the repo root,
# .device-bin/{tracer,libtracer_cupti.so,replay} carried):
#  1. issue 17: a --replayable recording of examples/graphs_inference.py
#     capture (torch.cuda.graph, 20 replays) and its replay (graph launches
#     expanded into stream order: coverage, kernel time, checksum copy);
#  2. issue 21: bench/agent_overhead.py (agent metrics-only, agent with
#     duty-cycled recording, tracer record, untraced; interleaved).
set -uo pipefail
T=$(realpath .device-bin/tracer)
R=$(realpath .device-bin/replay)
log=$OUT/log_agent_replay.txt
{
nvidia-smi -L
echo "## issue 17: replay of a graph recording"
(cd examples && timeout 150 "$T" record --replayable --capture-data --gpu-timestamps -q --force -o /tmp/g_capture.rec -- python3 graphs_inference.py capture --replays 20)
"$R" plan /tmp/g_capture.rec | grep -E "launches|graph|captured|coverage"
timeout 200 "$R" /tmp/g_capture.rec --iterations 3 --warmup 1; echo "replay exit: $?"
cp /tmp/g_capture.rec/replay-report.json $OUT/graph_replay_report.json 2>/dev/null
echo "## issue 21: agent overhead"
timeout 330 python3 bench/agent_overhead.py --tracer "$T" --reps 2 --iterations 8 --out "$OUT"; echo "agent bench exit: $?"
} > $log 2>&1
tail -c 9000 $log
