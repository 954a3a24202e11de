# The tracer binary of a device call, for the experiments that source this file
# (gpu_default.sh, gpu_launch_cost.sh, ../replay/gpu_replayable_cost.sh):
# `find_tracer` sets T to $TRACER, else the tracer unpacked from
# .device-bin/bins.tar.xz into $WORK/bin (tracer, replay, libtracer_cupti.so),
# else .device-bin/tracer; exits 3 (after `say`) without one. It also mounts
# tracefs where it is not. Needs here (the repository root), WORK, log and say.
# shellcheck shell=bash
find_tracer() {
    T=${TRACER:-}
    if [ -z "$T" ] && [ -f "$here/.device-bin/bins.tar.xz" ]; then
        mkdir -p "$WORK/bin"
        tar -C "$WORK/bin" -xJf "$here/.device-bin/bins.tar.xz" 2>>"$log"
        T=$(find "$WORK/bin" -type f -name tracer | head -1)
    fi
    [ -z "$T" ] && [ -x "$here/.device-bin/tracer" ] && T=$here/.device-bin/tracer
    if [ -z "$T" ] || [ ! -f "$T" ]; then
        say "no tracer binary (.device-bin/bins.tar.xz, TRACER, .device-bin/tracer)"
        exit 3
    fi
    chmod +x "$T" 2>/dev/null
    mountpoint -q /sys/kernel/tracing 2>/dev/null || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
}
