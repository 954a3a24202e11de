#!/usr/bin/env bash
# Where replayed copies and rebuilt graph launches differ
# from the recording (docs/replay.md, *Fidelity of copies and graph
# launches*). One device call (kind nvidia-h100-x1, ≤ 8 min, as root from the
# repo root, .device-bin/{tracer,replay,libtracer_cupti.so} carried):
#
#   OUT=$OUT bash experiments/replay/gpu_fidelity.sh
#
# Records the held-out program (GPT-2 captured with torch.cuda.graph,
# launched 50 times: examples/graphs_inference.py capture --replays 50) with
# --replayable --capture-data --gpu-timestamps, then replays it four ways,
# each --iterations 3 --warmup 1: sequence with the graphs rebuilt on VMM
# windows (the default), the same on cuMemAlloc windows (--device-memory
# malloc), timed (the recorded pacing), and sequence with --expand-graphs.
# Prints, for each, the copies per host memory kind and the idle time inside
# a graph launch per transition (recorded vs replayed); the reports (and
# their timelines) are in $OUT/fidelity_reports.tgz, the log $OUT/fidelity.log.
set -uo pipefail
T=$(realpath .device-bin/tracer)
R=$(realpath .device-bin/replay)
OUT=${OUT:-/tmp/fidelity-out}
mkdir -p "$OUT"
REC=/tmp/fid_capture.rec
REP=/tmp/fid_reports
rm -rf "$REP" && mkdir -p "$REP"
log=$OUT/fidelity.log
run() { # $1: name, rest: replay options
    local name=$1
    shift
    echo "### $name: replay $*"
    timeout 170 "$R" "$REC" --iterations 3 --warmup 1 --report "$REP/fidelity_$name.json" "$@" > "$REP/fidelity_$name.txt" 2>&1
    echo "replay exit: $?"
    grep -E "mode |busy|copies|per graph launch|idle inside|identical|differ|windows" "$REP/fidelity_$name.txt" | head -30
}
{
nvidia-smi -L
rm -rf "$REC"
(cd examples && timeout 150 "$T" record --replayable --capture-data --gpu-timestamps -q --force -o "$REC" -- \
    python3 graphs_inference.py capture --replays 50); echo "record exit: $?"
"$R" plan "$REC" | grep -E "coverage|graph launches|rebuilt" | head -5
run vmm --mode sequence
run malloc --mode sequence --device-memory malloc
run timed --mode timed
run expanded --mode sequence --expand-graphs
python3 - "$REP" <<'PY'
import json, os, sys
out = sys.argv[1]
print("\n| replay | mode | copies error | busy error | span per launch: recorded, replayed (error) | idle inside a launch: recorded, replayed |")
print("|---|---|---|---|---|---|")
for name in ["vmm", "malloc", "timed", "expanded"]:
    try:
        r = json.load(open(os.path.join(out, f"fidelity_{name}.json")))
    except (OSError, ValueError) as e:
        print(f"| {name} | not run ({e}) | | | | |")
        continue
    for m in r.get("modes", []):
        c = m.get("cupti") or {}
        g = c.get("graph_launches") or {}
        gaps = g.get("gaps") or {}
        f = lambda x: "–" if x is None else f"{x:+.1f} %"
        span = (f"{g.get('recorded', {}).get('span_us_median')} µs, {g.get('replayed', {}).get('span_us_median')} µs "
                f"({f(g.get('span_error_pct'))})") if g else "–"
        idle = f"{gaps.get('recorded_us')} µs, {gaps.get('replayed_us')} µs" if gaps else "–"
        print(f"| {name} | {m['mode']} | {f(c.get('copies_error_pct'))} | {f(c.get('busy_error_pct'))} | {span} | {idle} |")
        for row in c.get("copies_by_host_memory", []):
            print(f"|   | copies {row['direction']} {row['host']} | recorded {row['recorded']} in {row['recorded_us']:.1f} µs "
                  f"| replayed {row['replayed_per_pass']} in {row['replayed_us']:.1f} µs | {f(row['error_pct'])} | |")
        for t in gaps.get("transitions", []):
            print(f"|   | idle {t['from'][:30]} -> {t['to'][:30]} ({t['count']}x) | | | {t['recorded_us']} µs | {t['replayed_us']} µs |")
PY
} > "$log" 2>&1
(cd "$REP" && tar -czf "$OUT/fidelity_reports.tgz" .)
tail -c 9000 "$log"
