#!/usr/bin/env bash
# Issue 34, generation beside batch 8 (docs/colocation.md): where does the
# real generation lose its time together? Runs the real pair (pinned: gen on
# CPUs 2-3, batch 8 on 4-5) under `tracer record` with the recordings' flags
# (CUPTI, every probe, scheduler records), ROUNDS rounds, and prints
# scripts/sync_waits.py's three tables (synchronizations, GPU slices, the
# calling thread's on-CPU / runnable / blocked time per run) and who held
# the CPU when the calling thread was runnable. TRACER_CPUS: the CPUs the
# tracer itself runs on (default: each variant of "all 8-15", i.e. unpinned,
# then away from the workloads' CPUs); IOCTLS=1 adds --ioctls (every ioctl
# into the NVIDIA driver, with its duration). After the tables: the calling
# thread's blocked time per run by cause (system call and file), alone and
# together, and with IOCTLS=1 its NVIDIA ioctls per run by name.
# One device call (≤ 5 min):
#   OUT=$OUT bash scripts/gpu_host_side.sh
set -uo pipefail
ROOT=$(pwd)
T=$(realpath .device-bin/tracer)
OUT=${OUT:-/tmp/host-side-out}
ROUNDS=${ROUNDS:-8}
mkdir -p "$OUT"
{
echo "### CPU topology"
lscpu | grep -E "^(Model name|Thread|Core|Socket|NUMA node|CPU\(s\)|CPU MHz|CPU max)" || true
for c in 2 3 4 5; do echo "cpu$c siblings: $(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list 2>/dev/null)"; done
for where in ${TRACER_CPUS:-all 8-15}; do
    pin=(); [ "$where" = all ] || pin=(taskset -c "$where")
    rec=/tmp/host_$where.rec
    rm -rf "$rec"
    echo "### real gen+batch traced, tracer on CPUs: $where"
    io=(); [ "${IOCTLS:-0}" = 1 ] && io=(--ioctls)
    timeout 200 "${pin[@]}" "$T" record "${io[@]}" --replayable --capture-data --gpu-timestamps -q --force -o "$rec" -- \
        python3 "$ROOT/scripts/colocation_real.py" gen batch --rounds "$ROUNDS" --cpus 2,3 4,5 \
        --out "$OUT/real_traced_$where.json" 2>&1 | grep -v "resolved .* driver entry points"
    tr=$(ls "$rec"/trace.jsonl* | head -1)
    python3 "$ROOT/scripts/sync_waits.py" "$tr"
    echo "### who held the CPU while the calling thread was runnable (gen, ms over all runs)"
    python3 - "$tr" <<'PY'
import json, sys, collections
phases, open_at, cmd, held = {}, {}, {}, collections.Counter()
off = []
for l in open(sys.argv[1]):
    if '"served ' in l or '"between"' in l:
        d = json.loads(l)
        if d.get("op") != "phase":
            continue
        if d["label"].startswith("served "):
            open_at[d["pid"]] = d["ts"]; cmd[d["pid"]] = d["label"].split()[1]
        elif d["pid"] in open_at:
            phases.setdefault(d["pid"], []).append((open_at.pop(d["pid"]), d["ts"]))
    elif '"off_cpu"' in l and '"runnable"' in l:
        off.append(json.loads(l))
gen = [p for p, c in cmd.items() if c == "gen"]
runs = {p: v for p, v in phases.items()}
def kind_of(pid, s, e):
    return "together" if any(o[0] < e and s < o[1] for q, v in runs.items() if q != pid for o in v) else "alone"
for d in off:
    if d["pid"] in gen and d["tid"] == d["pid"]:
        for s, e in phases.get(d["pid"], []):
            clip = max(0, min(d["end_ts"], e) - max(d["ts"], s))
            if clip:
                for h in d.get("held_by", []) or [{"comm": "?", "ns": clip}]:
                    held[h.get("comm", "?")] += min(h.get("ns", clip), clip)
for comm, ns in held.most_common(8):
    print(f"  {comm:20s} {ns / 1e6:9.1f}")
# The calling thread's blocked time by cause, and its NVIDIA ioctls, per run of each kind.
blocked = collections.Counter()
ioctl_n, ioctl_ns = collections.Counter(), collections.Counter()
nruns = collections.Counter()
for p in gen:
    for s, e in phases.get(p, []):
        nruns[kind_of(p, s, e)] += 1
for l in open(sys.argv[1]):
    if '"off_cpu"' in l and '"blocked"' in l:
        d = json.loads(l)
    elif '"type":"ioctl"' in l:
        d = json.loads(l)
    else:
        continue
    if d["pid"] not in gen or d["tid"] != d["pid"]:
        continue
    for s, e in phases.get(d["pid"], []):
        if d.get("type") == "ioctl":
            if s <= d["ts"] < e:
                k = (kind_of(d["pid"], s, e), d.get("name", "?"))
                ioctl_n[k] += 1
                ioctl_ns[k] += int(d.get("duration_us", 0) * 1000)
            continue
        clip = max(0, min(d["end_ts"], e) - max(d["ts"], s))
        if clip:
            blocked[(kind_of(d["pid"], s, e), d.get("name", "?"), d.get("file", ""))] += clip
print("### gen's calling thread: blocked time per run by cause (ms)")
for (k, name, f), ns in sorted(blocked.items(), key=lambda x: -x[1])[:14]:
    print(f"  {k:8s} {name:16s} {f[:24]:24s} {ns / 1e6 / max(1, nruns[k]):9.2f}")
if ioctl_n:
    print("### gen's calling thread: NVIDIA ioctls per run (count, ms)")
    for (k, name), n in sorted(ioctl_n.items(), key=lambda x: -ioctl_ns[x[0]])[:12]:
        print(f"  {k:8s} {name:28s} {n / max(1, nruns[k]):9.1f} {ioctl_ns[(k, name)] / 1e6 / max(1, nruns[k]):9.2f}")
PY
done
} 2>&1 | tee "$OUT/host_side.log"
