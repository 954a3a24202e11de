#!/usr/bin/env bash
# Quick overhead check on a GPU machine (the full benchmark is bench/overhead.py):
# GPT-2 generation iteration time untraced vs under tracer with various
# options, modes interleaved, ROUNDS rounds of 5 generation iterations each.
#   experiments/overhead/gpu_overhead_quick.sh .device-bin/tracer [ROUNDS] [MODE...]
# MODE is a name=tracer-options pair, e.g. 'entry_only=--no-return-probes';
# default modes: tracer (default options) and tracer --all-functions.
set -euo pipefail
tracer=${1:?usage: gpu_overhead_quick.sh TRACER [ROUNDS]}
rounds=${2:-3}
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
ex="$here/examples/transformer_inference.py"
run() { # mode -> appends "mode seconds" per generation iteration
  local mode=$1; shift
  "$@" python3 "$ex" --iterations 5 2>/dev/null | awk -v m="$mode" '/^\[iteration/ {sub("s,","",$3); print m, $3}' >> "$tmp/times"
}
shift $(( $# < 2 ? $# : 2 ))
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=("tracer=" "tracer_all_functions=--all-functions")
for r in $(seq "$rounds"); do
  run untraced env
  for m in "${modes[@]}"; do
    # shellcheck disable=SC2086
    run "${m%%=*}" "$tracer" -q --force ${m#*=} -o "$tmp/t.jsonl" --
  done
done
python3 - "$tmp/times" <<'PY'
import sys, statistics as st
from collections import defaultdict
t = defaultdict(list)
for line in open(sys.argv[1]):
    m, s = line.split(); t[m].append(float(s))
base = st.median(t["untraced"])
print(f"{'mode':<22} {'n':>3} {'median s':>9} {'min':>7} {'max':>7} {'ratio':>6}")
for m in ["untraced"] + [k for k in t if k != "untraced"]:
    v = t[m]
    print(f"{m:<22} {len(v):>3} {st.median(v):>9.4f} {min(v):>7.4f} {max(v):>7.4f} {st.median(v)/base:>6.3f}")
PY
