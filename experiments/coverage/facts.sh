#!/usr/bin/env bash
# Facts about the GPU machine's libcuda for the capture tables (issue 29): its exported cu*
# symbols and what cuGetProcAddress hands out per version and flags. Run on the GPU machine.
set -u
LIB=${LIBCUDA:-/usr/local/nvidia/lib64/libcuda.so.1}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nm -D --defined-only "$LIB" | awk '$2=="T"{print $3}' | grep '^cu' | sort -u > "$OUT/libcuda_exports.txt"
wc -l "$OUT/libcuda_exports.txt"
# Base names: strip _ptsz/_ptds and a trailing _vN.
sed -E 's/_(ptsz|ptds)$//; s/_v[0-9]+$//' "$OUT/libcuda_exports.txt" | sort -u > /tmp/bases.txt
cc -O1 -o /tmp/procaddr_map "$(dirname "$0")/procaddr_map.c" -ldl
/tmp/procaddr_map "$LIB" < /tmp/bases.txt > "$OUT/procaddr_map.txt"
wc -l "$OUT/procaddr_map.txt"
inc=$(dirname "$(command -v nvcc)")/../include
for h in cuda.h cudaTypedefs.h; do cp "$inc/$h" "$OUT/" 2>/dev/null || find / -name "$h" -path '*include*' 2>/dev/null | head -1 | xargs -r -I{} cp {} "$OUT/"; done
cb=$(find / -name cupti_driver_cbid.h 2>/dev/null | head -1); [ -n "$cb" ] && cp "$cb" "$OUT/"
find / -name 'libcupti.so*' 2>/dev/null | head -3
ls -la "$OUT"
