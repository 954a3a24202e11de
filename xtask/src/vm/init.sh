#!/bin/busybox sh
# /init of the kprobe VM (staged by `cargo xtask kprobe-vm`): mount the pseudo file systems,
# run every /tests/* in order, print one PASS/FAIL/SKIP line each, then report the verdict
# through isa-debug-exit (qemu exits 1 when all passed, 3 when one failed) and power off.
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t bpf bpf /sys/fs/bpf
uptime_s() { cut -d' ' -f1 /proc/uptime; }
echo; echo "init: kernel $(uname -r), /init started at uptime $(uptime_s) s"

fail=0
for t in /tests/*; do
    name=${t##*/}
    echo "== $name"
    start=$(uptime_s)
    timeout 120 "$t"
    rc=$?
    # timeout kills the script, not what it started: a tracer left running
    # would hold its BPF objects and probes into the next test.
    if killall -9 tracer 2>/dev/null; then
        echo "$name: killed a tracer it left running"
        sleep 2
    fi
    dt=$(awk "BEGIN { printf \"%.1f\", $(uptime_s) - $start }")
    case $rc in
        0) echo "PASS: $name ($dt s)" ;;
        77) echo "SKIP: $name ($dt s)" ;;
        *) echo "FAIL: $name (exit $rc, $dt s)"; fail=1 ;;
    esac
done

echo "VERDICT: $([ $fail = 0 ] && echo pass || echo fail) at uptime $(uptime_s) s"
if [ $fail = 0 ]; then printf '\000'; else printf '\001'; fi | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
poweroff -f
