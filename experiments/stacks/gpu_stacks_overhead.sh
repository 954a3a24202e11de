#!/usr/bin/env bash
# What stacks cost a GPU program, side by side (one device call, ~6 min): ROUNDS interleaved
# rounds of untraced / tracer --no-stacks / tracer (stacks on, the default) on GPT-2
# generation (examples/transformer_inference.py, ITER iterations each; the order rotates
# each round), and the training loop with a file-reading loader (train_loader.py).
#   bash experiments/stacks/gpu_stacks_overhead.sh [ROUNDS] [ITER]   (binaries in .device-bin/, results in $OUT)
set -uo pipefail
rounds=${1:-12}
iters=${2:-4}
here=$(cd "$(dirname "$0")/../.." && pwd)
# The binaries may come as one archive (the tree and the binaries together exceed what travels).
if [ ! -x "$here/.device-bin/tracer" ] && [ -f "$here/.device-bin/bins.tar.xz" ]; then
  tar -C "$here/.device-bin" -xJf "$here/.device-bin/bins.tar.xz"
fi
tracer=$here/.device-bin/tracer
out=${OUT:-/tmp/gpu_stacks_overhead}
mkdir -p "$out"
work=$(mktemp -d)
times=$out/times.txt; : > "$times"
run() { # round mode cmd... ; appends "round mode seconds" per generation iteration
  local r=$1 m=$2; shift 2
  timeout 120 "$@" python3 "$here/examples/transformer_inference.py" --iterations "$iters" 2>/dev/null \
    | awk -v m="$m" -v r="$r" '/^\[iteration/ {sub("s,","",$3); print r, m, $3}' >> "$times"
}
for r in $(seq "$rounds"); do
  case $((r % 3)) in
    0) order="untraced nostacks stacks" ;; 1) order="nostacks stacks untraced" ;; *) order="stacks untraced nostacks" ;;
  esac
  for m in $order; do
    case $m in
      untraced) run "$r" untraced env ;;
      nostacks) run "$r" nostacks "$tracer" record -q --force --no-stacks -o "$work/t.jsonl" -- ;;
      stacks) run "$r" stacks "$tracer" record -q --force -o "$work/t.jsonl" -- ;;
    esac
  done
  echo "[$(date +%T)] round $r done"
done
python3 - "$times" <<'PY' | tee "$out/overhead_table.txt"
import sys, statistics as st
from collections import defaultdict
per = defaultdict(lambda: defaultdict(list))
for line in open(sys.argv[1]):
    r, m, s = line.split(); per[m][int(r)].append(float(s))
allv = {m: [x for v in per[m].values() for x in v] for m in per}
base = st.median(allv["untraced"])
print(f"GPT-2 generation iteration time, {len(per['untraced'])} interleaved rounds")
print(f"{'mode':<10} {'iters':>5} {'median s':>9} {'vs untraced':>12}")
for m in ("untraced", "nostacks", "stacks"):
    print(f"{m:<10} {len(allv[m]):>5} {st.median(allv[m]):>9.4f} {st.median(allv[m]) / base:>12.3f}")
rounds = sorted(set(per["stacks"]) & set(per["nostacks"]) & set(per["untraced"]))
for a, b in (("stacks", "nostacks"), ("stacks", "untraced"), ("nostacks", "untraced")):
    q = [st.median(per[a][r]) / st.median(per[b][r]) for r in rounds]
    print(f"paired per round {a} / {b}: median {st.median(q):.3f}, range {min(q):.3f}-{max(q):.3f} ({len(q)} rounds)")
u = [st.median(per["untraced"][r]) for r in rounds]
pairs = [u[i + 1] / u[i] for i in range(len(u) - 1)]
print(f"untraced round to round (the noise): median {st.median(pairs):.3f}, range {min(pairs):.3f}-{max(pairs):.3f}")
PY
