#!/usr/bin/env bash
# Times docs/parquet.md's fleet queries (tracer/tests/parquet/*.sql) with
# DuckDB over N Parquet traces: the committed traces (traces/) exported in
# turn, each under its own --host (node001, node002, ...), into OUT/fleet/.
# Each query runs 5 times in one DuckDB process (a fresh connection each
# time); the median, min and max are printed.
#
#   experiments/parquet/parquet_fleet.sh [N=100] [OUT=target/parquet-fleet]
#
# TRACER (default target/release/tracer, else target/debug/tracer) exports;
# PYTHON (default ~/.cache/tracer/duckdb-venv/bin/python3, `cargo xtask setup`) has duckdb.
# KEEP=1: time the queries over the OUT/fleet/ an earlier run wrote.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
n=${1:-100}
out=${2:-target/parquet-fleet}
# the release build when it is there and knows --format parquet
tracer=${TRACER:-target/debug/tracer}
if [ -z "${TRACER:-}" ] && target/release/tracer export --help 2>/dev/null | grep -q parquet; then
  tracer=target/release/tracer
fi
python=${PYTHON:-$HOME/.cache/tracer/duckdb-venv/bin/python3}
mapfile -t traces < <(ls -d traces/*.jsonl.gz traces/*.rec | sort)
if [ "${KEEP:-}" != 1 ]; then
rm -rf "$out/fleet"
mkdir -p "$out/fleet"
start=$(date +%s%N)
for i in $(seq 1 "$n"); do
  host=$(printf 'node%03d' "$i")
  echo "${traces[$(((i - 1) % ${#traces[@]}))]} $out/fleet/$host $host"
done | xargs -P "$(nproc)" -L 1 sh -c 'exec "$0" export "$1" --format parquet -o "$2" --host "$3" 2>/dev/null' "$tracer" ||
  { echo "an export failed: run $tracer export TRACE --format parquet -o DIR by hand to see why" >&2; exit 1; }
echo "exported $(ls "$out/fleet" | wc -l) traces with $tracer in $((($(date +%s%N) - start) / 1000000)) ms ($(du -sh "$out/fleet" | cut -f1))"
fi
"$python" - "$out" "$PWD/tracer/tests/parquet" <<'PY'
import os, statistics, sys, time
import duckdb
out, queries = sys.argv[1], sys.argv[2]
os.chdir(out)
print(f"duckdb {duckdb.__version__}, {os.cpu_count()} cores")
con = duckdb.connect()
for t in ["calls", "launches", "idle_scopes", "idle_gaps", "gpu_activity"]:
    rows, hosts = con.execute(f"SELECT count(*), count(DISTINCT host) FROM read_parquet('fleet/*/{t}.parquet')").fetchone()
    print(f"  {t}: {rows} rows from {hosts} hosts")
for name in sorted(f for f in os.listdir(queries) if f.endswith(".sql")):
    sql = open(os.path.join(queries, name)).read()
    times = []
    for _ in range(5):
        c = duckdb.connect()
        t0 = time.perf_counter()
        rows = c.execute(sql).fetchall()
        times.append(time.perf_counter() - t0)
        c.close()
    ms = [round(x * 1000, 1) for x in times]
    print(f"{name}: median {statistics.median(ms)} ms (min {min(ms)}, max {max(ms)}), {len(rows)} rows; first: {rows[0]}")
PY
