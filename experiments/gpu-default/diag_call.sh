#!/usr/bin/env bash
# Where the default recording's busy time goes wrong (issue 43), one device
# call: per program (PROGS, of gpu_default.sh's), two default runs (the first
# with an empty durations library, the second with what the first left) and
# one full --gpu-timestamps run, then durations_diag.py of each default run
# against the full one, and the headers' and footers' GPU lines.
#
#   PROGS="jax train" OUT=$OUT bash experiments/gpu-default/diag_call.sh
#
# EXTRA_ENV (e.g. "XLA_FLAGS=--xla_gpu_enable_command_buffer=") is given to
# every run of a second pass (tag suffix .x) when set. Files in $OUT: diag.txt
# and, as fit, the traces (zstd).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here" || exit 2
D=$here/experiments/gpu-default
OUT=${OUT:-/tmp/diag-out}
PROGS=${PROGS:-jax train gpt2}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/diag.XXXXXX)
mkdir -p "$WORK/bin"
tar -C "$WORK/bin" -xJf .device-bin/bins.tar.xz
T=$(find "$WORK/bin" -type f -name tracer | head -1)
chmod +x "$T"
mountpoint -q /sys/kernel/tracing 2>/dev/null || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
log=$OUT/diag.txt
SECONDS=0
say() { echo "[+${SECONDS}s] $*" | tee -a "$log"; }
. "$D/programs.sh"
one() { # prog tag lib extra-env flags...
    local p=$1 tag=$2 lib=$3 extra=$4
    shift 4
    local -a cmd
    read -r -a cmd <<<"$(cmd_of "$p")"
    local tr=$WORK/$p.$tag.jsonl
    env $extra TRACER_DURATIONS_LIBRARY="$lib" timeout -k 10 150 "$T" record -q --force "$@" -o "$tr" -- "${cmd[@]}" \
        >"$WORK/$p.$tag.out" 2>"$WORK/$p.$tag.err" </dev/null
    local rc=$?
    say "$p $tag: rc $rc, $(grep STEADY_S "$WORK/$p.$tag.out" | tail -1), trace $(du -h "$tr" 2>/dev/null | cut -f1)"
    [ "$rc" = 0 ] || tail -n 5 "$WORK/$p.$tag.err" | cut -c1-300 | tee -a "$log"
    grep -i "gpu\|durations\|window" "$WORK/$p.$tag.err" | head -5 | cut -c1-400 >>"$log"
}
pass() { # suffix extra-env
    local sfx=$1 extra=$2
    for p in $PROGS; do
        mkdir -p "$WORK/lib$sfx.$p"
        local lib=$WORK/lib$sfx.$p/durations
        one "$p" "d1$sfx" "$lib" "$extra"
        one "$p" "d2$sfx" "$lib" "$extra"
        one "$p" "full$sfx" "" "$extra" --gpu-timestamps
        for d in d1 d2; do
            say "=== $p $d$sfx against full$sfx"
            timeout 120 python3 "$D/durations_diag.py" "$WORK/$p.$d$sfx.jsonl" "$WORK/$p.full$sfx.jsonl" --top 12 2>&1 \
                | cut -c1-1600 >>"$log"
            for k in "$d$sfx" "full$sfx"; do
                timeout 60 "$T" gaps "$WORK/$p.$k.jsonl" 2>&1 | head -45 | cut -c1-220 | sed "s/^/  gaps $k: /" >>"$log"
            done
        done
    done
}
pass "" ""
[ -n "${EXTRA_ENV:-}" ] && pass .x "$EXTRA_ENV"
say "done"
# the traces named in KEEP (default: the first program's d2 and full), without their
# CPU samples, stacks, scheduler and power lines, gzipped, as fit in 16 MiB each
first=${PROGS%% *}
for f in ${KEEP:-$first.d2 $first.full}; do
    [ -f "$WORK/$f.jsonl" ] || continue
    grep -v -E '"type":"(sample|stack|sched|power)"' "$WORK/$f.jsonl" | gzip -6 > "$OUT/$f.jsonl.gz"
    [ "$(stat -c %s "$OUT/$f.jsonl.gz")" -gt 16000000 ] && { say "$f: too large to keep"; rm -f "$OUT/$f.jsonl.gz"; }
done
ls -l "$OUT"
