#!/usr/bin/env bash
# The what-if recordings and a short co-location run in one H100 device call (< 9.5 min): the what-if recordings (record and
# pack only) and a co-location run with fewer rounds; each script's files are packed
# into one tarball in $OUT (the device tool brings back few files).
#   bash experiments/what-if/gpu_issue34_h100.sh
set -uo pipefail
OUT=${OUT:-/tmp/out34}
mkdir -p "$OUT"
SKIP_SELF=1 OUT=$OUT bash experiments/what-if/gpu_whatif.sh h100 > "$OUT/whatif_h100.txt" 2>&1
echo "what-if h100 part: exit $?"; tail -n 6 "$OUT/whatif_h100.txt"
mkdir -p /tmp/coloc-out
ROUNDS=${ROUNDS:-4} BUDGET_S=${BUDGET_S:-360} OUT=/tmp/coloc-out bash experiments/colocation/gpu_colocation.sh > /tmp/coloc-out/stdout.txt 2>&1
echo "colocation: exit $?"
tar -czf "$OUT/colocation.tgz" -C /tmp coloc-out
tail -n 40 /tmp/coloc-out/stdout.txt
