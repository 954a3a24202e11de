#!/bin/sh
# The VM runs the Debian kernel and that kernel has kprobes (the kprobe PMU).
echo "uname -r: $(uname -r)"
case $(uname -r) in
    *-amd64) ;;
    *) echo "not a Debian -amd64 kernel"; exit 1 ;;
esac
pmu=/sys/bus/event_source/devices/kprobe/type
[ -e $pmu ] || { echo "$pmu is missing: no kprobes"; exit 1; }
echo "kprobe PMU type $(cat $pmu); BTF: $(wc -c < /sys/kernel/btf/vmlinux) bytes"
