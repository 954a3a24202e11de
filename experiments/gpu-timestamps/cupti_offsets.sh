#!/usr/bin/env bash
# Prints the offsets of the CUPTI record fields tracer-cupti reads (and the
# enum values it uses), from CUPTI's own headers, to compare with
# tracer-cupti/src/records.rs. Run on the GPU machine:
#   experiments/gpu-timestamps/cupti_offsets.sh [/usr/local/cuda-13.0/targets/x86_64-linux/include]
set -euo pipefail
H=${1:-/usr/local/cuda-13.0/targets/x86_64-linux/include}
A=$H/cupti_activity.h
K=$(grep -oE 'CUpti_ActivityKernel[0-9]+' "$A" | sort -V | tail -1)
M=$(grep -oE 'CUpti_ActivityMemcpy[0-9]+' "$A" | sort -V | tail -1)
S=$(grep -oE 'CUpti_ActivityMemset[0-9]+' "$A" | sort -V | tail -1)
echo "# header $A; newest records: $K $M $S"
echo "# record structs named for the kinds we enable:"
grep -B1 -A8 -E '^\s*CUPTI_ACTIVITY_KIND_(MEMCPY|MEMSET|KERNEL|CONCURRENT_KERNEL)\s*=' "$A" | grep -oE 'CUpti_Activity[A-Za-z]+[0-9]*|CUPTI_ACTIVITY_KIND_[A-Z_]+ *= *[0-9]+' | tr '\n' ' '; echo
tmp=$(mktemp -d)
cat > "$tmp/off.c" <<'C'
#include <stdio.h>
#include <stddef.h>
#include <cupti.h>
#define O(T, f) printf("%-24s %-22s %3zu\n", #T, #f, offsetof(T, f))
int main(void) {
  printf("CUPTI_API_VERSION %d\n", CUPTI_API_VERSION);
  printf("CUPTI_ERROR_MAX_LIMIT_REACHED %d\n", CUPTI_ERROR_MAX_LIMIT_REACHED);
  printf("KIND MEMCPY %d MEMSET %d KERNEL %d CONCURRENT_KERNEL %d\n", CUPTI_ACTIVITY_KIND_MEMCPY,
         CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  printf("DOMAIN_RESOURCE %d CONTEXT_CREATED %d STREAM_CREATED %d FLUSH_FORCED %d\n", CUPTI_CB_DOMAIN_RESOURCE,
         CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_STREAM_CREATED, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  printf("MEMCPY_KIND HTOD %d DTOH %d DTOD %d HTOH %d PTOP %d\n", CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
         CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMCPY_KIND_HTOH,
         CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
  O(CUpti_ResourceData, context); O(CUpti_ResourceData, resourceHandle);
  O(KT, start); O(KT, end); O(KT, deviceId); O(KT, contextId); O(KT, streamId); O(KT, gridX); O(KT, blockX);
  O(KT, dynamicSharedMemory); O(KT, correlationId); O(KT, name); O(KT, graphNodeId); O(KT, graphId);
  printf("sizeof KT %zu\n", sizeof(KT));
  O(MT, copyKind); O(MT, srcKind); O(MT, dstKind); O(MT, flags); O(MT, bytes); O(MT, start); O(MT, end);
  O(MT, deviceId); O(MT, contextId); O(MT, streamId); O(MT, correlationId); printf("sizeof MT %zu\n", sizeof(MT));
  O(ST, value); O(ST, bytes); O(ST, start); O(ST, end); O(ST, deviceId); O(ST, contextId); O(ST, streamId);
  O(ST, correlationId); O(ST, memoryKind); printf("sizeof ST %zu\n", sizeof(ST));
  return 0;
}
C
cc -I"$H" -DKT="$K" -DMT="$M" -DST="$S" -o "$tmp/off" "$tmp/off.c"
"$tmp/off"
rm -rf "$tmp"
