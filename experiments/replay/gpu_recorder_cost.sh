#!/usr/bin/env bash
# What the recorder costs a host-bound program, mode by mode (issue 44, docs/replay.md
# *Where the rest goes*). One device call (kind nvidia-h200, as root, from the
# repo root; .device-bin/bins.tar.xz holding tracer, replay and libtracer_cupti.so: `cargo xtask
# build --release`, then tar -C target/release -cJf …):
#
#   OUT=$OUT bash experiments/replay/gpu_recorder_cost.sh
#
# For each round (ROUNDS, interleaved, the mode order rotated every round), every mode of
# MODES runs recorder_cost_reps.py KIND (warm-up, then REPS measured steps in the same
# process) once: untraced, or under `tracer record` with the mode's options and
# --bpf-stats. Then the table: per mode the median over processes of each process's
# median step, its ratio to the untraced median, the extra per probed call (CALLS per
# step), the spread over processes and within them, and the footer's bpf_stats per
# program (runs per step, ns per run). With REPLAY=1 the last round's --replayable
# recordings are replayed alone (the same recording as both tenants of
# `replay --together --rounds 3`, compensated pacing) beside the untraced phase;
# REPLAY=all: every round's (the replays' median against the untraced processes').
# Files in $OUT: cost_log.txt, cost_table.txt, results.tgz (runs.jsonl, footers).
# A mode's options may start with @PATH: that mode runs the tracer binary at PATH (an older
# build beside the new one).
# RECORDED_SPEED_TOO=1: each replay also with --recorded-speed (replay_TAG.recorded.json);
# HISTORY=PATH: the recordings' host speed history (TRACER_HOST_SPEED_HISTORY; default: a
# fresh one in the work directory, so that the rounds build it from empty).
# Environment: KIND (mlp), ARGS (--steps 600), REPS (5), ROUNDS (5), CALLS (9, the MLP's
# probed calls per step: 8 launches and a synchronization), BUDGET_S (480).
set -u
ROOT=$(pwd)
. "$ROOT/experiments/replay/device_bins.sh"
OUT=${OUT:-/tmp/cost-out}
KIND=${KIND:-mlp}
ARGS=${ARGS:---steps 600}
REPS=${REPS:-5}
ROUNDS=${ROUNDS:-5}
CALLS=${CALLS:-9}
BUDGET_S=${BUDGET_S:-480}
REPLAY=${REPLAY:-1}
P=$ROOT/experiments/replay/recorder_cost_reps.py
WORK=/tmp/cost-work
rm -rf "$WORK" && mkdir -p "$WORK" "$OUT"
export TRACER_HOST_SPEED_HISTORY=${HISTORY:-$WORK/host_speed.json}
t0=$(date +%s)
# name|tracer options ("-" = untraced)
MODES=${MODES:-"untraced|-
empty-probes|--no-gpu --no-sched --no-stacks --bench-probe empty
nogpu|--no-gpu
nogpu-nosched|--no-gpu --no-sched
default|
replayable|--replayable
replayable-nosched|--replayable --no-sched
replayable-nostacks|--replayable --no-stacks
replayable-cupti|--replayable --gpu-timestamps
cupti|--gpu-timestamps"}
mapfile -t M <<< "$MODES"
n=${#M[@]}
{
    nvidia-smi -L
    nproc
    uname -r
    for ((r = 1; r <= ROUNDS; r++)); do
        for ((j = 0; j < n; j++)); do
            [ $(($(date +%s) - t0)) -ge "$BUDGET_S" ] && { echo "budget spent at round $r"; break 2; }
            e=${M[$(((j + r) % n))]}
            name=${e%%|*}
            opts=${e#*|}
            f=$WORK/$name.$r
            w0=$(date +%s.%N)
            # shellcheck disable=SC2086
            if [ "$opts" = "-" ]; then
                res=$(timeout 120 python3 "$P" $KIND $ARGS --reps "$REPS" 2> "$f.err" | tail -1)
            else
                # "@PATH opts": this mode runs the tracer binary at PATH (another build)
                tb=$T
                case "$opts" in @*) tb=${opts%% *}; tb=${tb#@}; opts=${opts#* } ; [ "$opts" = "@$tb" ] && opts= ;; esac
                case " $opts " in *" --replayable "*) o="$f.rec" ;; *) o="$f.jsonl" ;; esac
                res=$(timeout 150 "$tb" record $opts --bpf-stats -q --force -o "$o" -- python3 "$P" $KIND $ARGS --reps "$REPS" 2> "$f.err" | tail -1)
                tr=$o
                [ -d "$o" ] && tr=$o/trace.jsonl
                tail -1 "$tr" > "$f.footer.json" 2>/dev/null
                grep -m1 -E '"probe_trap|"host_calibration' "$tr" > /dev/null 2>&1
                [ "$r" -lt "$ROUNDS" ] && [ ! -d "$o" ] && rm -f "$o"
            fi
            echo "{\"mode\": \"$name\", \"round\": $r, \"result\": ${res:-null}}" >> "$WORK/runs.jsonl"
            echo "round $r $name ($(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $w0}") s): ${res:-failed: $(tail -2 "$f.err" | tr '\n' ' ')}"
        done
    done
    if [ "$REPLAY" = 1 ] || [ "$REPLAY" = all ]; then
        for e in "${M[@]}"; do
            name=${e%%|*}
            recs=$(ls -d "$WORK/$name".*.rec 2>/dev/null | sort -t. -k2 -n)
            [ "$REPLAY" = 1 ] && recs=$(echo "$recs" | tail -1)
            for rec in $recs; do
                [ $(($(date +%s) - t0)) -ge $((BUDGET_S + 120)) ] && { echo "replay of $rec: skipped (budget)"; continue; }
                tag=$(basename "$rec" .rec)
                echo "### replay alone $tag: $rec"
                timeout 120 "$R" "$rec" "$rec" --together --rounds 3 --report "$WORK/replay_$tag.json" 2>&1 \
                    | grep -E "pacing:|alone ms|^1 |^2 |error|refus" | head -12
                if [ "${RECORDED_SPEED_TOO:-0}" = 1 ]; then
                    timeout 120 "$R" "$rec" "$rec" --together --rounds 3 --recorded-speed \
                        --report "$WORK/replay_$tag.recorded.json" 2>&1 | grep -E "pacing:|error|refus" | head -4
                fi
            done
        done
    fi
    python3 - "$WORK" "$REPS" "$CALLS" "$ARGS" <<'PY' | tee "$WORK/cost_table.txt"
import glob, json, os, statistics as st, sys
work, reps, calls, args = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
steps = int(args.split("--steps")[1].split()[0]) if "--steps" in args else 600
runs = [json.loads(l) for l in open(os.path.join(work, "runs.jsonl"))]
modes = []
for r in runs:
    if r["mode"] not in modes:
        modes.append(r["mode"])
def per_process(m):
    return [st.median(r["result"]["seconds"]) for r in runs if r["mode"] == m and r["result"]]
def within(m):
    v = [(max(x) - min(x)) / st.median(x) for x in (r["result"]["seconds"] for r in runs if r["mode"] == m and r["result"])]
    return st.median(v) if v else float("nan")
u = per_process("untraced")
um = st.median(u) if u else float("nan")
print(f"step: {steps} iterations of the workload, {calls} probed calls each; per process the median of {reps} reps")
print("| mode | processes | median ms | ratio | extra µs per call | spread over processes | within a process |")
print("|---|---|---|---|---|---|---|")
for m in modes:
    v = per_process(m)
    if not v:
        print(f"| {m} | 0 | | | | | |")
        continue
    md = st.median(v)
    extra = (md - um) / (steps * calls) * 1e6
    print(f"| {m} | {len(v)} | {md*1e3:.2f} | {md/um:.3f}× | {extra:+.2f} | {(max(v)-min(v))/md*100:.1f} % | {within(m)*100:.1f} % |")
# paired: per round, each mode's process against the untraced process of the same round
rounds = sorted({r["round"] for r in runs})
def by_round(m):
    return {r["round"]: st.median(r["result"]["seconds"]) for r in runs if r["mode"] == m and r["result"]}
ur = by_round("untraced")
if ur and len(ur) > 1:
    print()
    print(f"Paired per round (mode / untraced of the same round; untraced spread over rounds {(max(ur.values()) - min(ur.values())) / st.median(ur.values()) * 100:.1f} % of its median)")
    print("| mode | rounds | median ratio | range | median points over default | range |")
    print("|---|---|---|---|---|---|")
    dr = by_round("default")
    for m in modes:
        mr = by_round(m)
        q = [mr[k] / ur[k] for k in rounds if k in mr and k in ur]
        if not q:
            continue
        d = [(mr[k] - dr[k]) / ur[k] * 100 for k in rounds if k in mr and k in ur and k in dr]
        pts = f"{st.median(d):+.1f} | {min(d):+.1f} … {max(d):+.1f}" if d and m not in ("default", "untraced") else " | "
        print(f"| {m} | {len(q)} | {st.median(q):.3f}× | {min(q):.3f}–{max(q):.3f} | {pts} |")
print()
print("The collector's CPU (s; per mode the median over its processes): before the command (loading, verifying), in all; own-thread switch-outs")
for m in modes:
    c = []
    for f in sorted(glob.glob(os.path.join(work, f"{m}.*.footer.json"))):
        try:
            foot = json.loads(open(f).read())
        except ValueError:
            continue
        col = foot.get("collector") or {}
        b = col.get("before_command") or {}
        c.append((b.get("cpu_user_s", float("nan")), b.get("cpu_system_s", float("nan")), col.get("cpu_user_s", float("nan")),
                  col.get("cpu_system_s", float("nan")), foot.get("duration_s", float("nan")),
                  (foot.get("stack_sampling") or {}).get("own_switch_outs", float("nan")),
                  (foot.get("power") or {}).get("rounds", float("nan")),
                  (foot.get("power") or {}).get("energy_reads", float("nan")),
                  (foot.get("power") or {}).get("round_us_mean", float("nan"))))
    if c:
        med = [st.median(x[i] for x in c) for i in range(9)]
        print(f"{m}: {len(c)} processes: before user {med[0]:.2f} system {med[1]:.2f}; all user {med[2]:.2f} system {med[3]:.2f}; duration {med[4]:.1f}; own switch-outs {med[5]}; power rounds {med[6]}, energy reads {med[7]}, µs a round {med[8]}")
print()
print("bpf_stats (last footer of each mode): program runs / ns per run")
for m in modes:
    fs = sorted(glob.glob(os.path.join(work, f"{m}.*.footer.json")))
    if not fs:
        continue
    try:
        foot = json.loads(open(fs[-1]).read())
    except ValueError:
        print(f"{m}: footer not read")
        continue
    bs = foot.get("bpf_stats") or {}
    print(f"{m}: " + ", ".join(f"{k} {v.get('runs')}/{round(v.get('ns_per_run', 0))}" for k, v in sorted(bs.items())))
    sw, ss = foot.get("stack_walks") or {}, foot.get("stack_sampling") or {}
    if sw:
        print(f"{m}: stack walks (walks, µs each, Python µs each): " + ", ".join(
            f"{k} {w['walks']}, {w['ns'] / max(w['walks'], 1) / 1e3:.2f}, {w['python_ns'] / max(w['walks'], 1) / 1e3:.2f}"
            for k, w in sw.items()) + f"; launches sampled in {ss.get('launches_sampled_in')}, out {ss.get('launches_sampled_out')}")
r1 = [r["result"]["seconds"][0] for r in runs if r["mode"] == "untraced" and r["result"]]
if r1:
    print()
    print(f"untraced first rep (the recordings' phase generate): median {st.median(r1)*1e3:.2f} ms over {len(r1)} processes ({min(r1)*1e3:.2f}-{max(r1)*1e3:.2f})")
    replayed = []
    for f in sorted(glob.glob(os.path.join(work, "replay_*.json"))):
        try:
            t = json.load(open(f))["tenants"][0]
        except (OSError, ValueError, KeyError, IndexError):
            continue
        al = (t.get("measured") or {}).get("alone_median_ms")
        pc = (t.get("plan") or {}).get("pacing") or {}
        if al:
            replayed.append(al)
            print(f"replayed alone {os.path.basename(f)[7:-5]}: {al:.2f} ms ({(al / (st.median(r1)*1e3) - 1)*100:+.1f} % against the untraced first rep); removed {pc.get('removed_ns')} ns, {pc.get('removed_ns_per_call')} ns per call, missing {pc.get('missing')}")
    if len(replayed) > 1:
        print(f"replayed alone, median of {len(replayed)} recordings: {st.median(replayed):.2f} ms ({(st.median(replayed) / (st.median(r1)*1e3) - 1)*100:+.1f} % against the untraced first reps' median)")
PY
} > "$WORK/cost_log.txt" 2>&1
cp "$WORK/cost_log.txt" "$WORK/cost_table.txt" "$OUT/" 2>/dev/null
(cd "$WORK" && tar -czf "$OUT/results.tgz" runs.jsonl ./*.footer.json ./*.json 2>/dev/null)
tail -c 9000 "$WORK/cost_log.txt"
