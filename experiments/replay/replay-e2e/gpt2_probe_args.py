#!/usr/bin/env python3
"""GPT-2 replay diagnosis (issue 7): from a replayable recording's trace.jsonl,
print `--probe` arguments for replay (the index tensors of the first two
embedding lookups and the randint output), and a scan of every launch's
parameter bytes for words that point into recorded allocations but that the
planner's relocation (8-aligned plain 8-byte words) would miss.

    python3 gpt2_probe_args.py NAME.rec/trace.jsonl probes   # one --probe argument per line
    python3 gpt2_probe_args.py NAME.rec/trace.jsonl scan     # the pointer scan, text
"""
import bisect
import collections
import json
import struct
import sys


def lines(path):
    with open(path) as f:
        for n, l in enumerate(f, 1):
            try:
                yield n, json.loads(l)
            except ValueError:
                continue


def probes(path):
    sel, randint, after_randint, copies = [], None, None, []
    for n, d in lines(path):
        t = d.get("type")
        if t == "kernel" and d.get("params"):
            k = d.get("kernel", "")
            if randint is not None and after_randint is None:
                after_randint = n
            if "random_from_to" in k and randint is None:
                randint = n
                # distribution kernel: (numel, PhiloxCudaState, dist, transform{out_data,...}) -> out at 40
                b = bytes.fromhex(d["params"])
                print(f"# randint line {n}: params {len(b)} bytes, words " +
                      " ".join(hex(struct.unpack_from('<Q', b, o)[0]) for o in range(0, len(b) - 7, 8)), file=sys.stderr)
            if "indexSelectSmallIndex" in k and len(sel) < 2:
                b = bytes.fromhex(d["params"])
                idx = struct.unpack_from("<Q", b, 432)[0]
                sel.append((n, idx, b))
        elif t == "memcpy" and d.get("direction") == "d2d":
            a = d.get("args", {})
            copies.append((n, int(a.get("dstDevice", "0x0"), 16), int(a.get("srcDevice", "0x0"), 16), d.get("size")))
        if len(sel) == 2:
            break
    out = []
    for n, idx, b in sel:
        out.append(f"{n}:{idx:#x}:128")
        src = [c for c in copies if c[0] < n and c[1] == idx]
        if src:
            print(f"# line {n}: indices {idx:#x} copied at line {src[-1][0]} from {src[-1][2]:#x}", file=sys.stderr)
            out.append(f"{n}:{src[-1][2]:#x}:128")
            if after_randint:
                out.append(f"{after_randint}:{src[-1][2]:#x}:128")
        print(f"# line {n}: indexSelect params {len(b)} bytes, srcSelectDimSize word {struct.unpack_from('<q', b, len(b) - 8)[0]}",
              file=sys.stderr)
    print(f"# randint line {randint}, next launch line {after_randint}", file=sys.stderr)
    for o in dict.fromkeys(out):
        print(o)


def scan(path):
    ranges = []  # (start, end, kind, line)
    hits = collections.Counter()
    examples = {}
    launches = 0
    for n, d in lines(path):
        t = d.get("type")
        if t == "memory" and d.get("op") == "alloc" and d.get("ptr") and d.get("size"):
            s = int(d["ptr"], 16)
            ranges.append((s, s + int(d["size"]), d["name"], n))
            ranges.sort()
            continue
        if t != "kernel" or not d.get("params"):
            continue
        launches += 1
        b = bytes.fromhex(d["params"])
        k = d.get("kernel", "")[:60]

        lo, hi = ranges[0][0] if ranges else 0, max((r[1] for r in ranges), default=0)

        def inside(v):
            if not lo <= v < hi:
                return None
            i = bisect.bisect_right(ranges, (v, 1 << 64)) - 1
            if i >= 0 and ranges[i][0] <= v < ranges[i][1]:
                return ranges[i][2]
            return None

        for o in range(0, len(b) - 7, 4 if len(b) < 4096 else 8):
            w = struct.unpack_from("<Q", b, o)[0]
            forms = [("plain", w), ("low48", w & 0xFFFFFFFFFFFF), ("shl4", (w << 4) & 0xFFFFFFFFFFFFFFFF),
                     ("low48shl4", (w & 0xFFFFFFFFFFFF) << 4)]
            for form, v in forms:
                if v < 0x10000 or v == w and form != "plain":
                    continue
                name = inside(v)
                if name:
                    key = (k, form, "aligned" if o % 8 == 0 else "unaligned", name, d.get("params_from"))
                    hits[key] += 1
                    examples.setdefault(key, (n, o, len(b)))
                    break
    print(f"pointer scan: {launches} launches with params, {len(ranges)} allocations")
    for key, c in sorted(hits.items(), key=lambda x: -x[1]):
        if key[1] == "plain" and key[2] == "aligned":
            continue
        n, o, size = examples[key]
        print(f"  {c:6d} {key[1]:10s} {key[2]:9s} into {key[3]:14s} from {key[4]} first line {n} offset {o}/{size}: {key[0]}")
    plain = sum(c for key, c in hits.items() if key[1] == "plain" and key[2] == "aligned")
    print(f"  {plain} plain 8-aligned pointer words (the planner's candidates)")


if __name__ == "__main__":
    {"probes": probes, "scan": scan}[sys.argv[2]](sys.argv[1])
