#!/bin/sh
# Placeholder for the kprobe ioctl test: runs the tracer's kprobe ioctl path (if it has one)
# on do_vfs_ioctl while ioctl_client issues 10 ioctls 0xc020462a on /dev/null, and reports
# what it recorded. Passes when the tracer exits 0; the exact checks come with the feature.
if ! /tracer --help 2>&1 | grep -q -- --ioctl-path; then
    echo "SKIP: tracer has no kprobe ioctl path yet"
    exit 77
fi
out=/tmp/k.jsonl
/tracer --ioctls --ioctl-path kprobe --kprobe-function do_vfs_ioctl --buffer-size 8 -o $out -- /fake/ioctl_client
rc=$?
echo "tracer exited $rc; $(wc -l < $out) lines, $(grep -c 0xc020462a $out) mention 0xc020462a (10 issued)"
head -c 4000 $out
exit $rc
