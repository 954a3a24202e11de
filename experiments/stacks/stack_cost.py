#!/usr/bin/env python3
"""The per-call cost of stacks, from --bpf-stats recordings made with and without them
(experiments/stacks/gpu_stacks.sh).

    stack_cost.py A_STACKS.jsonl A_NOSTACKS.jsonl [B_STACKS.jsonl B_NOSTACKS.jsonl ...]

For each pair: per eBPF program, runs and ns per run with and without stacks; the
traced calls, launches and stack lines; the eBPF time per traced call with and without
stacks (all programs' run time / calls) and the difference, per call and per second of
the traced run.
"""
import json
import sys


def load(path):
    head = foot = None
    calls = launches = stacks = with_stack = 0
    t0 = t1 = None
    for line in open(path):
        if not line.strip():
            continue
        v = json.loads(line)
        t = v.get("type")
        if head is None:
            head = v
            continue
        if t == "footer":
            foot = v
            continue
        if t == "stack":
            stacks += 1
            continue
        if isinstance(v.get("ts"), int) and t not in ("sched", "power", "marker"):
            t0 = v["ts"] if t0 is None else min(t0, v["ts"])
            t1 = v["ts"] if t1 is None else max(t1, v["ts"])
        if "stack" in v:
            with_stack += 1
        if t in ("kernel", "graph") and v.get("op") == "launch":
            launches += 1
    foot = foot or {}
    calls = foot.get("calls", 0)
    secs = (t1 - t0) / 1e9 if t0 is not None else 0
    return head, foot, calls, launches, stacks, with_stack, secs


def main() -> None:
    args = sys.argv[1:]
    for a, b in zip(args[::2], args[1::2]):
        print(f"== {a.rsplit('/', 1)[-1]} against {b.rsplit('/', 1)[-1]}")
        ra, rb = load(a), load(b)
        for name, (head, foot, calls, launches, stacks, with_stack, secs) in (("stacks", ra), ("no stacks", rb)):
            bs = foot.get("bpf_stats") or {}
            total = sum(s.get("run_time_ns", 0) for s in bs.values())
            print(f"  {name:<9}: {calls} calls, {launches} launches, {stacks} stack lines, {with_stack} lines with a stack, "
                  f"{secs:.1f} s traced; all programs {total / 1e6:.1f} ms = {total / calls if calls else 0:.0f} ns per call")
            for p, s in sorted(bs.items()):
                if s.get("runs"):
                    print(f"      {p:<20} {s['runs']:>9} runs {s.get('ns_per_run', 0):>8.0f} ns/run {s['run_time_ns'] / 1e6:>9.2f} ms")
            st = foot.get("stacks")
            if st:
                print(f"      footer stacks: {json.dumps(st, sort_keys=True)[:600]}")
        (_, fa, ca, *_), (_, fb, cb, *_) = ra, rb
        ta = sum(s.get("run_time_ns", 0) for s in (fa.get("bpf_stats") or {}).values())
        tb = sum(s.get("run_time_ns", 0) for s in (fb.get("bpf_stats") or {}).values())
        if ca and cb:
            d = ta / ca - tb / cb
            print(f"  eBPF time per traced call: {ta / ca:.0f} ns with stacks, {tb / cb:.0f} ns without: +{d:.0f} ns per call; "
                  f"at {ca / ra[-1] if ra[-1] else 0:.0f} calls/s that is {d * (ca / ra[-1] if ra[-1] else 0) / 1e7:.2f} % of one CPU")


if __name__ == "__main__":
    main()
