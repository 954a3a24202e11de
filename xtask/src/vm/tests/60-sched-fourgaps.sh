#!/bin/sh
# The scheduler path on the Debian kernel: four idle gaps with four operating-system
# causes (tracer/tests/fakecuda/fourgaps.c), each named by `tracer gaps` (the same
# program as tracer/tests/root_sched.rs on the CI machine's kernel).
out=/tmp/sched.jsonl
# No stacks: a blocked read's file kind is read from /proc when its switch record
# is decoded; under TCG the debug collector resolving stacks falls seconds behind
# and reads it after the program exited ("blocked in read" without "(pipe)").
# Stacks on this kernel are exercised by tests 20-50; their attribution is tested
# on the CI kernel (tracer/tests/root_stacks.rs).
/tracer -o $out --buffer-size 8 --no-stacks --libcuda /fake/libcuda.so.1 -- /fake/fourgaps 80 > /tmp/fourgaps.out
rc=$?
fail() { echo "$*"; echo "-- gaps:"; cat /tmp/gaps.txt 2>/dev/null; exit 1; }
[ $rc = 0 ] || fail "tracer exited $rc"
grep '"type":"header"' $out | grep -q '"sched_path":"raw_tracepoint"' || fail 'header lacks "sched_path":"raw_tracepoint"'
# Python frames are asked for by default; Linux 6.1's verifier does not take the walker:
# the header says so rather than claiming them.
grep '"type":"footer"' $out | grep -q '"total":0' || fail 'no footer with "total":0'
/tracer gaps $out > /tmp/gaps.txt || fail "tracer gaps failed"
hog=$(sed -n 's/^hog //p' /tmp/fourgaps.out)
# The main cause of each gap is the first cause on its "thread N:" line.
for want in "asleep in clock_nanosleep" "on CPU" "blocked in read (pipe)" "preempted by cpuhog (pid $hog)"; do
    grep "thread [0-9]*: $want [0-9]* %" /tmp/gaps.txt > /dev/null || fail "no gap whose main cause is: $want"
done
echo "four gaps: asleep in clock_nanosleep, on CPU, blocked in read (pipe), preempted by cpuhog (pid $hog)"
