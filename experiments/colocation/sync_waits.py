#!/usr/bin/env python3
"""Where a served workload waits, alone and together (docs/colocation.md,
call 10's follow-up): reads a trace of `colocation_real.py` run under
`tracer record` (each served run is a phase `served KIND K` of its process,
colocation_workloads.py marks them) and prints, per workload and kind of run
(alone: no other workload's phase overlaps; together: one does), the
runs' mean wall time, synchronizing calls per run and the time they took,
and the distribution of one synchronization's time. With `--gpu-timestamps`
a second table gives, per run, the workload's GPU activities (kernels,
copies, sets), their time, and the slices: the stretches of the workload's
own activities with no other workload's activity started in between. Beside
a tenant that never runs out of work each slice costs a wait for the
other's time slice (docs/colocation.md), so slices per run against
synchronizations per run tells whether a workload loses the GPU once per
synchronization or more often. With the tracer's scheduler records
(`off_cpu` lines, on by default) a third table splits each run of the
thread that makes the workload's CUDA calls into on-CPU time, time
runnable but not running (preempted, waiting for a CPU), time stopped
(SIGSTOP: under `--capture-data` the recorder stops the thread after each
synchronization and device-to-host copy to read the bytes) and other
off-CPU time (blocked), with the on-CPU time per call: a workload slowed on
its host side shows it there, not in its synchronizations.

    python3 sync_waits.py TRACE.jsonl[.zst] [--causes WORKLOAD]
"""
import argparse
import collections
import io
import json
import statistics
import subprocess
import sys

WAITS = ("Synchronize", "DtoH_v2", "DtoH(")


def lines(path):
    if path.endswith(".zst"):
        p = subprocess.Popen(["zstd", "-dc", path], stdout=subprocess.PIPE)
        yield from io.TextIOWrapper(p.stdout)
    else:
        yield from open(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--causes", metavar="WORKLOAD",
                    help="also print, for that workload's calling thread, who held the CPU while it was "
                         "runnable, its blocked and stopped time by cause, and its NVIDIA ioctls (--ioctls)")
    a = ap.parse_args()
    phases = {}  # pid -> [(start, end)]
    open_at = {}
    calls = {}  # pid -> [(ts, dur_ns, name)]
    gpu = []  # (ts, end, pid)
    cuda = {}  # (pid, tid) -> [ts] of every CUDA call
    off = {}  # (pid, tid) -> [(ts, end, "runnable" | "stopped" | "blocked", the off_cpu line)]
    ioctls = {}  # (pid, tid) -> [(ts, dur_ns, name)]
    cmd = {}
    for l in lines(a.trace):
        try:
            d = json.loads(l)
        except ValueError:
            continue
        pid = d.get("pid")
        if d.get("type") == "marker" and d.get("op") == "phase":
            label = d.get("label", "")
            if label.startswith("served "):
                open_at[pid] = d["ts"]
                cmd[pid] = label.split()[1]
            elif label == "between" and pid in open_at:
                phases.setdefault(pid, []).append((open_at.pop(pid), d["ts"]))
            continue
        n = d.get("name", "")
        if d.get("type") == "sched" and d.get("op") == "off_cpu" and "end_ts" in d:
            how = "runnable" if d.get("state") == "runnable" else "stopped" if n == "stopped" else "blocked"
            off.setdefault((pid, d.get("tid")), []).append((d["ts"], d["end_ts"], how, d))
            continue
        if d.get("type") == "ioctl":
            ioctls.setdefault((pid, d.get("tid")), []).append((d["ts"], int(d.get("duration_us", 0) * 1000), n))
            continue
        if d.get("type") not in ("gpu", "sched") and n.startswith("cu") and "tid" in d:
            cuda.setdefault((pid, d["tid"]), []).append(d["ts"])
        if d.get("type") == "gpu" and "duration_us" in d and pid is not None:
            gpu.append((d["ts"], d["ts"] + int(d["duration_us"] * 1000), pid))
            continue
        if d.get("type") != "gpu" and "duration_us" in d and any(w in n for w in WAITS):
            calls.setdefault(pid, []).append((d["ts"], int(d["duration_us"] * 1000), n))
    print("  pid workload                     kind     runs  wall ms (mean)  syncs/run  sync ms/run  one sync: median p90 max (µs)")
    for pid, kind, sel in groups(phases):
        waits = [(ts, dur) for ts, dur, _ in calls.get(pid, []) if any(s <= ts < e for s, e in sel)]
        one = sorted(dur / 1e3 for _, dur in waits)
        q = lambda x: one[min(len(one) - 1, int(x * len(one)))] if one else float("nan")  # noqa: E731
        print(f"{head(pid, cmd, kind, sel)}"
              f"{statistics.fmean((e - s) / 1e6 for s, e in sel):10.1f} {len(waits) / len(sel):8.1f} "
              f"{sum(d for _, d in waits) / 1e6 / len(sel):10.1f}   {q(.5):8.1f} {q(.9):8.1f} {one[-1] if one else float('nan'):8.1f}")
    if gpu:
        gpu_table(phases, cmd, sorted(gpu))
    if off:
        host_table(phases, cmd, cuda, off)
    if a.causes:
        causes(phases, cmd, cuda, off, ioctls, a.causes)


def runs_of(phases, pid, kind):
    """The runs of `pid` of that kind: alone (no other workload's run overlaps) or together."""
    others = [iv for p, v in phases.items() if p != pid for iv in v]
    return [(s, e) for s, e in phases[pid] if any(o[0] < e and s < o[1] for o in others) == (kind == "together")]


def groups(phases):
    """Each workload's runs of each kind, as a table's rows take them: (pid, kind, runs)."""
    for pid in sorted(phases):
        for kind in ("alone", "together"):
            sel = runs_of(phases, pid, kind)
            if sel:
                yield pid, kind, sel


def head(pid, cmd, kind, sel):
    """A row's first columns: pid, workload, kind, runs."""
    return f"{pid:5d} {cmd.get(pid, '')[:28]:28s} {kind:8s} {len(sel):3d} "


def calling_thread(cuda, pid, sel):
    """The thread of `pid` that made the most CUDA calls in the runs `sel`, and their count (None: no call)."""
    counts = {tid: sum(1 for ts in v if any(s <= ts < e for s, e in sel)) for (p, tid), v in cuda.items() if p == pid}
    if not counts or max(counts.values()) == 0:
        return None
    tid = max(counts, key=counts.get)
    return tid, counts[tid]


def clip(ts, end, sel):
    """How much of [ts, end) lies inside the runs `sel`, ns."""
    return sum(max(0, min(end, e) - max(ts, s)) for s, e in sel)


def host_table(phases, cmd, cuda, off):
    """Per workload and kind of run, the calling thread's on-CPU, runnable, stopped and blocked time."""
    print()
    print("  pid workload                     kind     runs   calls/run  on-CPU ms  runnable ms  stopped ms  blocked ms  "
          "on-CPU µs/call")
    for pid, kind, sel in groups(phases):
        caller = calling_thread(cuda, pid, sel)
        if caller is None:
            continue
        tid, n = caller
        t = {"runnable": 0, "stopped": 0, "blocked": 0}
        for ts, end, how, _ in off.get((pid, tid), []):
            t[how] += clip(ts, end, sel)
        on = sum(e - s for s, e in sel) - sum(t.values())
        k = len(sel)
        print(f"{head(pid, cmd, kind, sel)}{n / k:11.1f} {on / 1e6 / k:10.2f} "
              f"{t['runnable'] / 1e6 / k:12.2f} {t['stopped'] / 1e6 / k:11.2f} {t['blocked'] / 1e6 / k:11.2f} "
              f"{on / 1e3 / n:15.1f}")


def gpu_table(phases, cmd, gpu):
    """Per workload and kind of run: GPU activities and their time per run, and slices per run."""
    print()
    print("  pid workload                     kind     runs  activities/run  GPU ms/run  slices/run")
    for pid, kind, sel in groups(phases):
        n = busy = slices = 0
        for s, e in sel:
            prev = None
            for ts, end, p in gpu:
                if not s <= ts < e:
                    continue
                if p == pid:
                    n += 1
                    busy += end - ts
                    if prev != pid:
                        slices += 1
                prev = p
        print(f"{head(pid, cmd, kind, sel)}{n / len(sel):14.1f} {busy / 1e6 / len(sel):11.2f} {slices / len(sel):11.1f}")


def causes(phases, cmd, cuda, off, ioctls, workload):
    """For `workload`'s calling thread (its runs of both kinds): who held the CPU while it was
    runnable (ms over all runs), its blocked and stopped time per run by cause (ms), and its
    NVIDIA ioctls per run (count, ms)."""
    held = collections.Counter()
    blocked = collections.Counter()
    io_n, io_ns = collections.Counter(), collections.Counter()
    runs = collections.Counter()
    for pid, kind, sel in groups(phases):
        if cmd.get(pid) != workload or (caller := calling_thread(cuda, pid, sel)) is None:
            continue
        tid = caller[0]
        runs[kind] += len(sel)
        for ts, end, how, d in off.get((pid, tid), []):
            c = clip(ts, end, sel)
            if not c:
                continue
            if how == "runnable":
                for h in d.get("held_by") or [{"comm": "?", "ns": c}]:
                    held[h.get("comm", "?")] += min(h.get("ns", c), c)
            else:
                blocked[(kind, d.get("name", "?"), d.get("file", ""))] += c
        for ts, dur, name in ioctls.get((pid, tid), []):
            if any(s <= ts < e for s, e in sel):
                io_n[(kind, name)] += 1
                io_ns[(kind, name)] += dur
    print()
    print(f"### who held the CPU while {workload}'s calling thread was runnable (ms over all runs)")
    for comm, ns in held.most_common(8):
        print(f"  {comm:20s} {ns / 1e6:9.1f}")
    print()
    print(f"### {workload}'s calling thread: blocked and stopped time per run by cause (ms)")
    for (k, name, f), ns in sorted(blocked.items(), key=lambda x: -x[1])[:14]:
        print(f"  {k:8s} {name:16s} {f[:24]:24s} {ns / 1e6 / runs[k]:9.2f}")
    if io_n:
        print()
        print(f"### {workload}'s calling thread: NVIDIA ioctls per run (count, ms)")
        for (k, name), n in sorted(io_n.items(), key=lambda x: -io_ns[x[0]])[:12]:
            print(f"  {k:8s} {name:28s} {n / runs[k]:9.1f} {io_ns[(k, name)] / 1e6 / runs[k]:9.2f}")


if __name__ == "__main__":
    sys.exit(main())
