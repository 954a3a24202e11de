# Call 15 (debug build: debug_build.patch): the side-stream warm-up variants of the minimal replay,
# the plan's streams as replay creates them, and replay with every stream at priority 0.
set -u
MICRO_ROUNDS=0 MICRO_KINDS= TORCH_KINDS=elementwise MIN_KINDS=elementwise MIN_VARIANTS="warm=sidex3 warm=sidehighx3" REPLAY_VARIANTS=default ROUNDS=1 PROGRAM=0 OUT=$OUT bash experiments/graphs/gpu_graph_process.sh 2>&1 | grep -E "median|rror"
R=.device-bin/replay
REPLAY_DEBUG_LIST=1 $R /tmp/t_elementwise.rec --mode sequence --iterations 1 --warmup 0 --no-cupti 2>&1 | grep "^debug" > /tmp/list.txt
grep -E "^debug: stream [0-9] " /tmp/list.txt | head -8
echo "replay, every stream at priority 0:"
REPLAY_DEBUG_PRIO0=1 timeout 100 $R /tmp/t_elementwise.rec --mode sequence --iterations 3 --warmup 1 --no-cupti --time-graph-launches 2>&1 | grep "timed with"
echo "replay again:"
timeout 100 $R /tmp/t_elementwise.rec --mode sequence --iterations 3 --warmup 1 --no-cupti --time-graph-launches 2>&1 | grep "timed with"
