"""Per-copy durations by direction and size, side by side: recordings
(trace.jsonl, or .jsonl.gz / .jsonl.zst, with CUPTI's gpu lines) and
replay timelines (NAME.timeline.jsonl: replay's measured pass). For each
(direction, size) the count and the median duration per file, its
throughput, and its difference from the first file; then, per file, the
copies' total over the sizes all files have, against the first file.

usage: python3 copy_sizes.py [--min-bytes N] LABEL=FILE [LABEL=FILE …]
  --min-bytes N: only copies of at least N bytes in the table and the totals

Issue 34, item 5 (docs/replay.md, *What the recorder costs a copy*): which
copies differ, and whether the reference itself moves between recordings.
"""
import gzip
import json
import statistics
import subprocess
import sys


def lines(path):
    if path.endswith(".zst"):
        out = subprocess.run(["zstd", "-dc", path], capture_output=True, text=True, check=True).stdout
        return out.splitlines()
    if path.endswith(".gz"):
        return gzip.open(path, "rt")
    return open(path)


def copies(path):
    """(direction, size) -> durations (µs) of the gpu memcpy lines."""
    by = {}
    for n, line in enumerate(lines(path), 1):
        try:
            j = json.loads(line)
        except ValueError:
            sys.exit(f"{path}:{n}: not a JSON line")
        if j.get("type") != "gpu" or j.get("op") != "memcpy" or "duration_us" not in j:
            continue
        by.setdefault((j.get("direction", "?"), int(j.get("size", 0))), []).append(float(j["duration_us"]))
    return by


def main(argv):
    min_bytes = 0
    if argv[:1] == ["--min-bytes"]:
        min_bytes = int(argv[1])
        argv = argv[2:]
    if not argv or any("=" not in a for a in argv):
        sys.exit(__doc__.strip().split("\n\n")[1])
    files = [a.split("=", 1) for a in argv]
    data = [(label, copies(path)) for label, path in files]
    keys = sorted({k for _, d in data for k in d if k[1] >= min_bytes}, key=lambda k: (k[0], -k[1]))
    head = "| direction | bytes | " + " | ".join(f"{label}: n, median µs (GB/s)" for label, _ in data)
    print(head + " |")
    print("|---|---|" + "---|" * len(data))
    for k in keys:
        cells = []
        base = statistics.median(data[0][1][k]) if k in data[0][1] else None
        for i, (_, d) in enumerate(data):
            if k not in d:
                cells.append("–")
                continue
            m = statistics.median(d[k])
            c = f"{len(d[k])}, {m:.2f} ({k[1] / m / 1e3:.2f})"
            if i and base:
                c += f" {100 * (m / base - 1):+.1f} %"
            cells.append(c)
        print(f"| {k[0]} | {k[1]} | " + " | ".join(cells) + " |")
    common = [k for k in keys if all(k in d for _, d in data)]
    totals = [sum(statistics.median(d[k]) * len(d[k]) for k in common) for _, d in data]
    print(f"\ntotal over the {len(common)} sizes every file has (median × count):")
    for (label, _), t in zip(data, totals):
        diff = f" ({100 * (t / totals[0] - 1):+.1f} %)" if totals[0] and label != data[0][0] else ""
        print(f"  {label}: {t:.1f} µs{diff}")


if __name__ == "__main__":
    main(sys.argv[1:])
