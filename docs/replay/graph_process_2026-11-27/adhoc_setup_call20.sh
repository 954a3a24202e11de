# Call 20 (debug build: debug_build.patch's environment switches): bisects
# replay's set-up and pass on the PyTorch elementwise chain, pass 1's graph
# launches. REPLAY_DEBUG_SKIP is `replay --skip-ops` now.
set -u
MICRO_ROUNDS=0 MICRO_KINDS= TORCH_KINDS=elementwise REPLAY_VARIANTS=default ROUNDS=1 PROGRAM=0 OUT=$OUT bash experiments/graphs/gpu_graph_process.sh 2>&1 | grep -E "median|rror"
R=.device-bin/replay
one() { echo "== $*"; env "$@" timeout 60 $R /tmp/t_elementwise.rec --mode sequence --iterations 1 --warmup 0 --no-cupti --time-graph-launches 2>&1 | grep -E "^pass|rror" | head -3; }
one X=1
one REPLAY_DEBUG_SKIP=launch@1
one REPLAY_DEBUG_SKIP=launch@0,launch@5,event,wait,copy,set,sync
one REPLAY_DEBUG_NO_ATTRS=1
one REPLAY_DEBUG_NO_GLOBALS=1
one REPLAY_DEBUG_NO_RESET=1
one REPLAY_DEBUG_LEGACY_CONST=1
one REPLAY_DEBUG_NO_ATTRS=1 REPLAY_DEBUG_NO_GLOBALS=1 REPLAY_DEBUG_NO_RESET=1 REPLAY_DEBUG_LEGACY_CONST=1
one X=1
