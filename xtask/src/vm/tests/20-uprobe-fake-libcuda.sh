#!/bin/sh
# The tracer's uprobe path on the fake libcuda. Kernel 6.1 has no uprobe_multi links
# (6.6+), so this also tests the fallback to one perf-event uprobe per function.
out=/tmp/t.jsonl
/tracer -o $out --buffer-size 8 --libcuda /fake/libcuda.so.1 -- /fake/driver
rc=$?
fail() { echo "$*"; echo "-- $out:"; cat $out; exit 1; }
[ $rc = 0 ] || fail "tracer exited $rc"
launches=$(grep -c '"name":"cuLaunchKernel"' $out)
[ "$launches" = 3 ] || fail "expected 3 cuLaunchKernel lines, found $launches"
grep '"name":"cuInit"' $out | grep -q '"Flags":"0x7"' || fail "no cuInit line with Flags 7"
grep -q '"name":"cuMemAlloc_v2"' $out || fail "no cuMemAlloc_v2 line"
grep '"type":"footer"' $out | grep -q '"total":0' || fail 'no footer with "total":0'
grep '"type":"header"' $out | grep -q '"uprobe_attach":"perf"' || fail 'header lacks "uprobe_attach":"perf"'
# Python frames are asked for by default; Linux 6.1's verifier does not take the walker:
# the header says so rather than claiming them.
grep '"type":"header"' $out | grep '"python":false' | grep -q '"python_error":"the kernel' \
    || fail 'header lacks "python":false with its "python_error"'
echo "3 cuLaunchKernel, cuInit(7), cuMemAlloc_v2, no loss, uprobe_attach perf, python frames refused in the header"
