#!/usr/bin/env bash
# The overhead of `tracer agent --duty-cycle` on GPT-2 generation
# (bench/workloads.py gen), against untraced and against the agent with its
# probes always attached. Modes interleaved (rotated each repetition),
# unpinned; `untraced_b` is untraced again, its ratio the machine's own
# spread. One device call (kind nvidia-h100-x1, as root, from the repo root,
# .device-bin/tracer carried) runs REPS repetitions (default 6, about 6
# minutes with 40 iterations a run); run it twice for 12 and merge here:
#
#   experiments/agent/gpu_agent_sampled_overhead.sh [REPS] [ITERATIONS] [ON/PERIOD]
#   python3 bench/agent_overhead.py --merge A/agent_overhead_*.json B/agent_overhead_*.json \
#       --modes untraced,untraced_b,agent,agent_sampled --out docs/bench
#
# The goal (issue 31): agent_sampled's paired ratio <= 1.01x median, within
# the untraced_b spread; the ratio of means shows the windows' share.
set -uo pipefail
reps=${1:-6}
iterations=${2:-40}
duty=${3:-1s/10s}
T=$(realpath .device-bin/tracer)
out=${OUT:-/tmp/agent_sampled}
mkdir -p "$out"
{
nvidia-smi -L
"$T" --version
timeout 560 python3 bench/agent_overhead.py --tracer "$T" --workloads gen \
    --modes untraced,untraced_b,agent,agent_sampled --reps "$reps" --iterations "$iterations" \
    --duty-cycle "$duty" --out "$out"
echo "agent bench exit: $?"
} > "$out/log_agent_sampled.txt" 2>&1
tail -c 6000 "$out/log_agent_sampled.txt"
