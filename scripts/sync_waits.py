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

    python3 sync_waits.py TRACE.jsonl[.zst]
"""
import argparse
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
    a = ap.parse_args()
    phases = {}  # pid -> [(start, end)]
    open_at = {}
    calls = {}  # pid -> [(ts, dur_ns, name)]
    gpu = []  # (ts, end, pid)
    cuda = {}  # (pid, tid) -> [ts] of every CUDA call
    off = {}  # (pid, tid) -> [(ts, end, "runnable" | "stopped" | "blocked")]
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
            off.setdefault((pid, d.get("tid")), []).append((d["ts"], d["end_ts"], how))
            continue
        if d.get("type") not in ("gpu", "sched") and n.startswith("cu") and "tid" in d:
            cuda.setdefault((pid, d["tid"]), []).append(d["ts"])
        if d.get("type") == "gpu" and "duration_us" in d and pid is not None:
            gpu.append((d["ts"], d["ts"] + int(d["duration_us"] * 1000), pid))
            continue
        if d.get("type") != "gpu" and "duration_us" in d and any(w in n for w in WAITS):
            calls.setdefault(pid, []).append((d["ts"], int(d["duration_us"] * 1000), n))
    print("  pid workload                     kind     runs  wall ms (mean)  syncs/run  sync ms/run  one sync: median p90 max (µs)")
    for pid in sorted(phases):
        for kind in ("alone", "together"):
            sel = runs_of(phases, pid, kind)
            if not sel:
                continue
            waits = [(ts, dur) for ts, dur, _ in calls.get(pid, []) if any(s <= ts < e for s, e in sel)]
            one = sorted(dur / 1e3 for _, dur in waits)
            q = lambda x: one[min(len(one) - 1, int(x * len(one)))] if one else float("nan")  # noqa: E731
            print(f"{pid:5d} {cmd.get(pid, '')[:28]:28s} {kind:8s} {len(sel):3d} "
                  f"{statistics.fmean((e - s) / 1e6 for s, e in sel):10.1f} {len(waits) / len(sel):8.1f} "
                  f"{sum(d for _, d in waits) / 1e6 / len(sel):10.1f}   {q(.5):8.1f} {q(.9):8.1f} {one[-1] if one else float('nan'):8.1f}")
    if gpu:
        gpu_table(phases, cmd, sorted(gpu))
    if off:
        host_table(phases, cmd, cuda, off)


def runs_of(phases, pid, kind):
    """The runs of `pid` of that kind: alone (no other workload's run overlaps) or together."""
    others = [iv for p, v in phases.items() if p != pid for iv in v]
    return [(s, e) for s, e in phases[pid] if any(o[0] < e and s < o[1] for o in others) == (kind == "together")]


def host_table(phases, cmd, cuda, off):
    """Per workload and kind of run, the calling thread's on-CPU, runnable, stopped and blocked time."""
    print()
    print("  pid workload                     kind     runs   calls/run  on-CPU ms  runnable ms  stopped ms  blocked ms  "
          "on-CPU µs/call")
    for pid in sorted(phases):
        for kind in ("alone", "together"):
            sel = runs_of(phases, pid, kind)
            if not sel:
                continue
            counts = {tid: sum(1 for ts in v if any(s <= ts < e for s, e in sel))
                      for (p, tid), v in cuda.items() if p == pid}
            if not counts or max(counts.values()) == 0:
                continue
            tid = max(counts, key=counts.get)
            n = counts[tid]
            run_ns = sum(e - s for s, e in sel)
            t = {"runnable": 0, "stopped": 0, "blocked": 0}
            for ts, end, how in off.get((pid, tid), []):
                for s, e in sel:
                    t[how] += max(0, min(end, e) - max(ts, s))
            on = run_ns - sum(t.values())
            k = len(sel)
            print(f"{pid:5d} {cmd.get(pid, '')[:28]:28s} {kind:8s} {k:3d} {n / k:11.1f} {on / 1e6 / k:10.2f} "
                  f"{t['runnable'] / 1e6 / k:12.2f} {t['stopped'] / 1e6 / k:11.2f} {t['blocked'] / 1e6 / k:11.2f} "
                  f"{on / 1e3 / n:15.1f}")


def gpu_table(phases, cmd, gpu):
    """Per workload and kind of run: GPU activities and their time per run, and slices per run."""
    print()
    print("  pid workload                     kind     runs  activities/run  GPU ms/run  slices/run")
    for pid in sorted(phases):
        for kind in ("alone", "together"):
            sel = runs_of(phases, pid, kind)
            if not sel:
                continue
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
            print(f"{pid:5d} {cmd.get(pid, '')[:28]:28s} {kind:8s} {len(sel):3d} "
                  f"{n / len(sel):14.1f} {busy / 1e6 / len(sel):11.2f} {slices / len(sel):11.1f}")


if __name__ == "__main__":
    sys.exit(main())
