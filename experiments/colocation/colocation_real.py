#!/usr/bin/env python3
"""The real workloads of a pair alone and together (experiments/colocation/gpu_colocation.sh,
docs/colocation.md): each workload of colocation_workloads.py is started once
as a server (set up and warmed up), then the rounds run in the order replay's
planner uses (replay/src/together/mod.rs: even rounds each tenant alone, then
together; odd rounds the mirror image). A together run creates both go files
at once: the start barrier. Writes the seconds of every measured phase.

    python3 colocation_real.py gen batch --rounds 6 --out real_gen+batch.json
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def rounds(tenants, n):
    """[[run, ...], ...]: a run is ("alone", tenant) or ("together", None)."""
    out = []
    for r in range(n):
        v = [("alone", t) for t in tenants] + [("together", None)]
        out.append(v if r % 2 == 0 else v[::-1])
    return out


def wait(path, procs, timeout):
    t0 = time.monotonic()
    while not os.path.exists(path):
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"a workload exited ({p.args[2]}: status {p.returncode}) while waiting for {path}")
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"timed out after {timeout} s waiting for {path}")
        time.sleep(0.001)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tenants", nargs=2, metavar="KIND")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for a setup or a run")
    ap.add_argument("--cpus", nargs=2, metavar="LIST", default=None,
                    help="pin each workload to these CPUs (e.g. 2,3 4,5; the first list for the first workload)")
    ap.add_argument("--settle", type=float, default=0.5,
                    help="seconds the GPU idles before each run (replay --together --settle-ms does the same): "
                         "its clocks depend on the power drawn just before")
    ap.add_argument("--workloads", default=os.path.join(HERE, "colocation_workloads.py"),
                    help="the workloads script (its KIND --serve DIR protocol)")
    a = ap.parse_args(argv)
    if a.tenants[0] == a.tenants[1]:
        ap.error("two different workloads")
    d = tempfile.mkdtemp(prefix="coloc-")
    procs = []
    result = {"tenants": a.tenants, "rounds": a.rounds, "runs": [], "error": None}
    try:
        for i, k in enumerate(a.tenants):
            log = open(os.path.join(d, f"{k}.log"), "w")
            cpus = {int(c) for c in a.cpus[i].split(",")} if a.cpus else None
            pin = (lambda c=cpus: os.sched_setaffinity(0, c)) if cpus else None
            procs.append(subprocess.Popen([sys.executable, a.workloads, k, "--serve", d],
                                          stdout=log, stderr=subprocess.STDOUT, preexec_fn=pin))
        for k in a.tenants:
            wait(os.path.join(d, f"ready.{k}"), procs, a.timeout)
        count = {k: 0 for k in a.tenants}
        for r, runs in enumerate(rounds(a.tenants, a.rounds)):
            for what, t in runs:
                who = a.tenants if what == "together" else [t]
                for k in who:
                    count[k] += 1
                time.sleep(a.settle)
                for k in who:  # the barrier: every go file at once
                    open(os.path.join(d, f"go.{k}.{count[k]}"), "w").close()
                secs = {}
                for k in who:
                    done = os.path.join(d, f"done.{k}.{count[k]}")
                    wait(done, procs, a.timeout)
                    with open(done) as f:
                        secs[k] = json.load(f)["seconds"]
                name = "together" if what == "together" else f"alone {t}"
                result["runs"].append({"round": r + 1, "run": name, "seconds": secs})
                print(f"round {r + 1} {name}: " + ", ".join(f"{k} {v:.3f} s" for k, v in secs.items()), flush=True)
    except RuntimeError as e:
        result["error"] = str(e)
        print(f"colocation_real: {e}", file=sys.stderr)
        for k in a.tenants:
            try:
                with open(os.path.join(d, f"{k}.log")) as f:
                    sys.stderr.write(f"--- {k}.log (last lines)\n" + "".join(f.readlines()[-15:]))
            except OSError:
                pass
    finally:
        open(os.path.join(d, "quit"), "w").close()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    return 1 if result["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
