"""Readers the GPU scripts' clock summaries share (gpu_graph_process.sh
CLOCKS=1, gpu_gemm_clocks.sh): nvidia-smi's `--format=csv,noheader -lms N`
samples, and the scripts' `MARK <unix seconds> <name>` lines.
"""
import datetime


def samples(path):
    """Each sample as (unix seconds, [the other fields, stripped]); lines
    that do not start with nvidia-smi's timestamp (its messages) are left out."""
    rows = []
    for line in open(path):
        p = [x.strip() for x in line.split(",")]
        try:
            rows.append((datetime.datetime.strptime(p[0], "%Y/%m/%d %H:%M:%S.%f").timestamp(), p[1:]))
        except (ValueError, IndexError):
            pass
    return rows


def number(field):
    """The number of a field such as `1980 MHz` or `121.00 W`."""
    return float(field.split()[0])


def marks(path):
    """The (unix seconds, name) of each `MARK` line of a log."""
    out = []
    for line in open(path):
        f = line.split()
        if f[:1] == ["MARK"]:
            out.append((float(f[1]), " ".join(f[2:])))
    return out
