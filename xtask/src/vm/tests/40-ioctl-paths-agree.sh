#!/bin/sh
# One program, both ioctl paths: the kprobe path's lines must equal the
# syscall tracepoint path's, and the header must name the path used.
# /dev/nvidiactl is made a /dev/urandom node (1:9): the tracepoint path
# follows it from its openat as an NVIDIA file, and the kprobe path probes
# urandom's ioctl handler, random_ioctl (struct file *, unsigned int, unsigned
# long), which answers -EINVAL to the request: the same value the syscall
# returns, unlike pipe_ioctl's -ENOIOCTLCMD. ioctl_client opens the node,
# issues 10 RM_CONTROL ioctls and closes it.
# By design the paths differ only in what the kprobe cannot know: its ioctl
# lines have "device":"/dev/nvidia* (frontend)" and "fd":4294967295 where the
# tracepoint has /dev/nvidiactl and the fd, and "ioctl_path". Those fields
# and the per-run ones (ts, pid, tid, cpu, seq, exit_cpu, exit_seq,
# duration_us) are checked or dropped; every other byte must be equal.
dev=/dev/nvidiactl
grep -q ' random_ioctl$' /proc/kallsyms || { echo "random_ioctl not in /proc/kallsyms"; exit 1; }
mknod $dev c 1 9 || exit 1
fail() { echo "$*"; for f in /tmp/p-*.jsonl; do echo "-- $f:"; head -c 2500 "$f"; echo; done; exit 1; }

# record PATH-ARG KPROBE-FUNCTION OUT
record() {
    /tracer --ioctls --ioctl-path "$1" --kprobe-function "$2" --kprobe-uvm-function "" \
        --libcuda /fake/libcuda.so.1 --buffer-size 8 -o "$3" -- /fake/ioctl_client $dev \
        || fail "tracer --ioctl-path $1 --kprobe-function $2 failed"
}
record kprobe random_ioctl /tmp/p-kprobe.jsonl
record tracepoint random_ioctl /tmp/p-tracepoint.jsonl
record auto random_ioctl /tmp/p-auto.jsonl
record auto no_such_function /tmp/p-fallback.jsonl

# The header names the path used; auto says why it did not take the kprobe.
header() { grep '"type":"header"' "/tmp/p-$1.jsonl"; }
for run in kprobe:kprobe tracepoint:tracepoint auto:kprobe; do
    header ${run%:*} | grep '"ioctl_path_refused":\[\]' | grep -q "\"ioctl_path\":\"${run#*:}\"" \
        || fail "run ${run%:*}: header lacks \"ioctl_path\":\"${run#*:}\" with nothing refused"
done
header fallback | grep -q '"ioctl_path":"tracepoint"' || fail 'fallback: header lacks "ioctl_path":"tracepoint"'
header fallback | grep '"error":"kprobe on no_such_function' | grep -q '"path":"kprobe"' \
    || fail "fallback: header does not give the kprobe's refusal"
echo "headers: kprobe, tracepoint, auto -> kprobe, auto with no_such_function -> tracepoint (kprobe refused)"

for run in kprobe tracepoint auto fallback; do
    f=/tmp/p-$run.jsonl
    tail -1 $f | grep -q '"total":0' || fail "$run: records lost: $(tail -1 $f)"
    n=$(grep '"type":"ioctl"' $f | grep '"name":"RM_CONTROL"' | grep '"cmd_name":"NV2080_CTRL_CMD_GPU_GET_INFO_V2"' \
        | grep '"hClient":"0xc1d00001"' | grep '"errno":"EINVAL"' | grep '"ret":-22' \
        | grep -c '"status_name":"NV_ERR_INVALID_ARGUMENT"')
    [ "$n" = 10 ] || fail "$run: $n of 10 RM_CONTROL ioctls decoded with EINVAL"
    [ "$(grep -c '"type":"ioctl"' $f)" = 10 ] || fail "$run: not exactly 10 ioctl lines"
    [ "$(grep -c '"type":"nvidia_fd"' $f)" = 2 ] || fail "$run: not exactly 2 nvidia_fd lines (open, close)"
done
fd=$(grep '"op":"open"' /tmp/p-tracepoint.jsonl | sed -E 's/.*"fd":([0-9]+).*/\1/')
# ioctl_lines RUN DEVICE FD: all 10 ioctl lines of RUN name DEVICE and FD.
ioctl_lines() {
    n=$(grep '"type":"ioctl"' /tmp/p-$1.jsonl | grep -F "\"device\":\"$2\"" | grep -c "\"fd\":$3,")
    [ "$n" = 10 ] || fail "$1: $n of 10 ioctl lines with device $2 and fd $3"
}
ioctl_lines kprobe '/dev/nvidia* (frontend)' 4294967295
ioctl_lines auto '/dev/nvidia* (frontend)' 4294967295
ioctl_lines tracepoint /dev/nvidiactl "$fd"
ioctl_lines fallback /dev/nvidiactl "$fd"

# Everything else equal, line by line.
norm() {
    grep -E '"type":"(ioctl|nvidia_fd)"' "/tmp/p-$1.jsonl" \
        | sed -E 's/"(ts|pid|tid|cpu|seq|exit_cpu|exit_seq|duration_us)":[^,}]*,?//g' \
        | sed -E '/"type":"ioctl"/ s/"(device|fd|ioctl_path)":[^,}]*,?//g' > "/tmp/p-$1.norm"
}
for run in kprobe tracepoint auto fallback; do norm $run; done
for run in tracepoint auto fallback; do
    diff /tmp/p-kprobe.norm /tmp/p-$run.norm || fail "kprobe and $run lines differ (diff above)"
done
echo "kprobe = tracepoint = auto = fallback: $(wc -l < /tmp/p-kprobe.norm) lines equal after dropping per-run fields"
grep '"type":"ioctl"' /tmp/p-kprobe.norm | head -1
