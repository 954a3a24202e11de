#!/bin/sh
# The kprobe ioctl path on a stock kernel: tracer's frontend kprobe/kretprobe
# go on pipe_ioctl (same signature as nvidia.ko's nvidia_unlocked_ioctl)
# while ioctl_client issues 10 RM_CONTROL-shaped ioctls on a pipe. Each must
# be recorded once, decoded (escape, command, handles, status from the
# struct), with pipe_ioctl's own -ENOIOCTLCMD from the kretprobe (the VFS turns
# it into ENOTTY for the caller), via "kprobe".
out=/tmp/k.jsonl
/tracer --ioctls --ioctl-path kprobe --kprobe-function pipe_ioctl --kprobe-uvm-function "" --libcuda /fake/libcuda.so.1 \
    --buffer-size 8 -o $out -- /fake/ioctl_client || { echo "tracer failed"; exit 1; }
n=$(grep '"type":"ioctl"' $out | grep '"name":"RM_CONTROL"' | grep '"ioctl_path":"kprobe"' \
    | grep '"cmd_name":"NV2080_CTRL_CMD_GPU_GET_INFO_V2"' | grep '"errno":"ENOIOCTLCMD"' \
    | grep '"status_name":"NV_ERR_INVALID_ARGUMENT"' | grep -c '"hClient":"0xc1d00001"')
grep -q '"ioctl_path":"kprobe"' $out || { echo "header does not say kprobe"; head -c 1500 $out; exit 1; }
echo "kprobe path: $n of 10 ioctls recorded and decoded"
grep '"type":"ioctl"' $out | head -1
[ "$n" = 10 ] || { head -c 3000 $out; exit 1; }
tail -1 $out | grep -q '"total":0' || { echo "records lost"; tail -1 $out; exit 1; }
