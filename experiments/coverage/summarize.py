"""Reads a trace's footer (the last line, on stdin) and prints the --check-coverage
comparison and the entry points not recorded, as Markdown. Usage:
    tail -n1 TRACE.jsonl | python3 summarize.py NAME"""
import json
import sys

name = sys.argv[1]
f = json.loads(sys.stdin.read())
cov, ep = f.get("coverage", {}), f.get("entry_points", {})
print(f"## {name}\n")
if "error" in cov:
    print(f"coverage: {cov['error']}\n")
else:
    eq, df, lo = cov.get("equal", []), cov.get("differ", []), cov.get("left_out", [])
    calls = sum(r["cupti"] for r in eq + df + lo)
    print(f"- CUPTI driver callbacks: {cov.get('functions')} functions, {calls} calls; "
          f"**{len(eq)} equal**, {len(df)} differ, {len(lo)} left out on purpose")
    print(f"- lost records: {f.get('lost', {}).get('total')}; trace calls: {f.get('calls')}\n")
    if df:
        print("| differs | CUPTI | recorded | counted |\n|---|---:|---:|---:|")
        for r in df:
            print(f"| {r['function']} | {r['cupti']} | {r['recorded']} | {r['counted']} |")
        print()
    if lo:
        print("| left out on purpose | CUPTI calls | reason |\n|---|---:|---|")
        for r in lo:
            print(f"| {r['function']} | {r['cupti']} | {r['reason']} |")
        print()
    print("<details><summary>equal</summary>\n")
    print(", ".join(f"{r['function']} {r['cupti']}" for r in eq))
    print("\n</details>\n")
print(f"- entry points resolved (symbol, version, flags): {ep.get('resolved')}, "
      f"to recorded functions: {ep.get('recorded')}; undecoded calls counted: {ep.get('unrecorded_calls')}\n")
nr = ep.get("not_recorded", [])
shown = [e for e in nr if e["status"] != "counted" or e["calls"]]
if shown:
    print("| resolved, not recorded | version | flags | resolves to | status | calls |\n|---|---:|---|---|---|---:|")
    for e in shown:
        print(f"| {e['symbol']} | {e['cuda_version']} | {e['flags']} | {e['resolves_to']} | {e['status']} | {e['calls']} |")
    print()
print(f"- {len(nr) - len(shown)} more resolved entry points are counted and were never called\n")
for e in ep.get("failed", []):
    print(f"- failed lookup: {e['symbol']} ({e['cuda_version']}, {e['flags']}): {e['error']} ×{e['resolutions']}")
print()
