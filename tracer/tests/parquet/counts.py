"""What DuckDB reads from Parquet exports (tracer/tests/parquet_duckdb.rs).

usage: counts.py ROOT
ROOT/fleet/NAME/ holds one export per trace. Prints one JSON object: per
NAME the counts the test compares with `tracer summary/report/gaps --json`,
and under "fleet" the rows of the fleet queries (*.sql beside this file)
run in ROOT.
"""
import json
import os
import sys

import duckdb

root = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
os.chdir(root)
con = duckdb.connect()


def q(sql, d):
    return con.execute(sql.replace("{d}", f"fleet/{d}")).fetchall()


out = {}
for d in sorted(os.listdir("fleet")):
    r = {}
    r["calls"] = q("SELECT count(*) FROM '{d}/calls.parquet'", d)[0][0]
    r["functions"] = dict(q("SELECT function, count(*) FROM '{d}/calls.parquet' GROUP BY function", d))
    r["failed_calls"] = q("SELECT count(*) FROM '{d}/calls.parquet' WHERE failed", d)[0][0]
    r["graph_launches"] = q("SELECT count(*) FROM '{d}/calls.parquet' WHERE kind = 'graph_launch'", d)[0][0]
    r["launches"] = q("SELECT count(*) FROM '{d}/launches.parquet'", d)[0][0]
    r["unnamed_launches"] = q("SELECT count(*) FROM '{d}/launches.parquet' WHERE kernel IS NULL", d)[0][0]
    r["kernels"] = dict(q("SELECT kernel, count(*) FROM '{d}/launches.parquet' WHERE kernel IS NOT NULL GROUP BY kernel", d))
    # each kernel's three spellings, as the launches table holds them
    r["spellings"] = {k: [f, s] for k, f, s in q(
        "SELECT DISTINCT kernel, kernel_demangled, kernel_short FROM '{d}/launches.parquet' WHERE kernel IS NOT NULL", d)}
    r["kernels_ok"] = dict(
        q("SELECT coalesce(kernel, '(unnamed handle)'), count(*) FROM '{d}/launches.parquet' WHERE NOT failed GROUP BY ALL", d)
    )
    r["copies"] = list(q("SELECT count(*), coalesce(sum(bytes), 0) FROM '{d}/copies.parquet'", d)[0])
    r["copies_ok"] = {k: [n, b] for k, n, b in q(
        "SELECT direction, count(*), sum(bytes) FROM '{d}/copies.parquet' WHERE NOT failed GROUP BY direction", d)}
    r["allocs"] = list(q("SELECT count(*), coalesce(sum(bytes), 0) FROM '{d}/calls.parquet' WHERE kind = 'alloc' AND NOT failed", d)[0])
    r["ioctls"] = q("SELECT count(*) FROM '{d}/ioctls.parquet' WHERE NOT file_op", d)[0][0]
    r["markers"] = q("SELECT count(*) FROM '{d}/markers.parquet'", d)[0][0]
    r["power"] = q("SELECT count(*) FROM '{d}/power.parquet'", d)[0][0]
    r["gaps"] = {s: [n, t] for s, n, t in q("SELECT scope, count(*), sum(dur_ns) FROM '{d}/idle_gaps.parquet' GROUP BY scope", d)}
    r["scopes"] = {s: [n, i, w] for s, n, i, w in q("SELECT scope, gaps, idle_ns, window_ns FROM '{d}/idle_scopes.parquet'", d)}
    # every row of every table names the host and the trace
    r["context"] = sorted(set(q(
        " UNION ".join(
            f"SELECT DISTINCT host, trace_id FROM '{{d}}/{t}.parquet'"
            for t in ["traces", "calls", "launches", "copies", "gpu_activity", "idle_scopes", "idle_gaps", "ioctls", "power", "markers"]
        ), d)))
    out[d] = r
out["fleet"] = {}
for name in sorted(os.listdir(here)):
    if name.endswith(".sql"):
        with open(os.path.join(here, name)) as f:
            out["fleet"][name] = [list(row) for row in con.execute(f.read()).fetchall()]
print(json.dumps(out))
