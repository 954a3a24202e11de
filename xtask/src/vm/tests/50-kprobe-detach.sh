#!/bin/sh
# Detaching leaves nothing behind on the kprobe path: after the tracer exits
# (command ended; SIGINT forwarded to the command; SIGINT while attached with
# -p) the kernel holds no kprobe (/sys/kernel/debug/kprobes/list, which lists
# the perf-PMU kprobes aya makes as well), no legacy kprobe event
# (/sys/kernel/tracing/kprobe_events) and no more BPF programs, links and maps
# than before it started. While it runs, the kprobe and kretprobe on
# random_ioctl must be listed, so the checks can see what they look for.
dev=/dev/nvidiactl
[ -e $dev ] || mknod $dev c 1 9 || exit 1
list=/sys/kernel/debug/kprobes/list
events=/sys/kernel/tracing/kprobe_events
[ -r $list ] || { echo "$list missing (debugfs)"; exit 1; }
fail() { echo "$*"; echo "-- $list:"; cat $list; echo "-- $events:"; cat $events; exit 1; }
probes() { grep -c ' random_ioctl+0x0' $list; }
before=$(/fake/bpf_objects) || exit 1
[ "$(probes)" = 0 ] && [ ! -s $events ] || fail "kprobes present before the tracer ran"
echo "before: $before, no kprobe"

# Until the tracer's kprobe and kretprobe are listed (20 s at most).
wait_attached() {
    i=0
    while [ "$(probes)" != 2 ]; do
        i=$((i + 1))
        [ $i -le 100 ] || fail "$1: kprobe and kretprobe on random_ioctl not listed after 20 s"
        sleep 0.2
    done
    grep ' random_ioctl+0x0' $list | grep -q '^[0-9a-f]*  *k ' || fail "$1: no kprobe (k) listed"
    grep ' random_ioctl+0x0' $list | grep -q '^[0-9a-f]*  *r ' || fail "$1: no kretprobe (r) listed"
    during=$(/fake/bpf_objects) || exit 1
    echo "$1: attached: $during"
    [ "$during" != "$before" ] || fail "$1: no BPF object while attached"
}
# Nothing left once the tracer is gone (BPF objects are freed asynchronously:
# 5 s at most).
check_gone() {
    [ "$(probes)" = 0 ] || fail "$1: kprobe left on random_ioctl"
    [ ! -s $events ] || fail "$1: kprobe_events not empty"
    i=0
    while now=$(/fake/bpf_objects) && [ "$now" != "$before" ]; do
        i=$((i + 1))
        [ $i -le 25 ] || fail "$1: BPF objects left: $now (before: $before)"
        sleep 0.2
    done
    echo "$1: detached: $now, no kprobe"
}
opts="--ioctls --ioctl-path kprobe --kprobe-function random_ioctl --kprobe-uvm-function= --libcuda /fake/libcuda.so.1 --buffer-size 8"

# 1. The command ends by itself.
/tracer $opts -o /tmp/d1.jsonl -- /fake/ioctl_client $dev || fail "exit: tracer failed"
[ "$(grep -c '"type":"ioctl"' /tmp/d1.jsonl)" = 10 ] || fail "exit: not 10 ioctl lines"
check_gone "command exited"

# 2. SIGINT to the tracer, which forwards it to its command. sigdfl: the shell
# starts background jobs with SIGINT ignored, which the command would inherit.
/fake/sigdfl /tracer $opts -o /tmp/d2.jsonl -- sleep 60 &
t=$!
wait_attached "SIGINT, command"
kill -INT $t
wait $t
rc=$?
[ $rc = 130 ] || fail "SIGINT, command: tracer exited $rc, not 130 (the command's 128 + 2)"
tail -1 /tmp/d2.jsonl | grep '"type":"footer"' | grep -q '"exit":{"code":null,"signal":2}' \
    || fail "SIGINT, command: footer lacks the command's exit by signal 2: $(tail -1 /tmp/d2.jsonl)"
check_gone "SIGINT, command"

# 3. SIGINT to the tracer attached to a running process with -p.
sleep 60 &
s=$!
/fake/sigdfl /tracer $opts -o /tmp/d3.jsonl -p $s &
t=$!
wait_attached "SIGINT, -p"
kill -INT $t
wait $t
rc=$?
kill $s
[ $rc = 0 ] || fail "SIGINT, -p: tracer exited $rc"
tail -1 /tmp/d3.jsonl | grep -q '"type":"footer"' || fail "SIGINT, -p: no footer: $(tail -1 /tmp/d3.jsonl)"
check_gone "SIGINT, -p"
