#!/usr/bin/env bash
# Quick overhead check on a GPU machine (the full benchmark is issue 9's):
# GPT-2 generation iteration time untraced vs under tracer (default probes)
# vs tracer --all-functions, interleaved, ROUNDS rounds of 5 iterations each.
#   scripts/gpu_overhead_quick.sh .device-bin/tracer [ROUNDS]
set -euo pipefail
tracer=${1:?usage: gpu_overhead_quick.sh TRACER [ROUNDS]}
rounds=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
ex="$here/examples/transformer_inference.py"
run() { # mode -> appends "mode seconds" per generation iteration
  local mode=$1; shift
  "$@" python3 "$ex" --iterations 5 2>/dev/null | awk -v m="$mode" '/^\[iteration/ {sub("s,","",$3); print m, $3}' >> "$tmp/times"
}
for r in $(seq "$rounds"); do
  run untraced env
  run tracer "$tracer" -q --force -o "$tmp/t.jsonl" --
  run tracer_all_functions "$tracer" -q --force --all-functions -o "$tmp/t.jsonl" --
done
python3 - "$tmp/times" <<'PY'
import sys, statistics as st
from collections import defaultdict
t = defaultdict(list)
for line in open(sys.argv[1]):
    m, s = line.split(); t[m].append(float(s))
base = st.median(t["untraced"])
print(f"{'mode':<22} {'n':>3} {'median s':>9} {'min':>7} {'max':>7} {'ratio':>6}")
for m in ("untraced", "tracer", "tracer_all_functions"):
    v = t[m]
    print(f"{m:<22} {len(v):>3} {st.median(v):>9.4f} {min(v):>7.4f} {max(v):>7.4f} {st.median(v)/base:>6.3f}")
PY
