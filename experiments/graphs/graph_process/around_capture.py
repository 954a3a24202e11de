"""Every recorded call from the last kernel launch before a program's first
stream capture to its first graph launch, runs of equal calls collapsed
(name, stream, whether captured), and every cu* name the recording holds:
what a program did around its capture, beyond what graph_spec.py keeps.

usage: python3 around_capture.py REC_DIR/trace.jsonl
"""
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
names = [(i, r.get("name") or r.get("type"), r.get("stream") or (r.get("args") or {}).get("hStream"), r.get("capture")) for i, r in enumerate(rows)]
cap = next(i for i, n, s, c in names if n and n.startswith("cuStreamBeginCapture"))
first_graph = next(i for i, n, s, c in names if n and n.startswith("cuGraphLaunch"))
last_launch = max(i for i, n, s, c in names[:cap] if n and n.startswith("cuLaunch"))
start = max(0, last_launch - 3)
prev = None; count = 0
out = []
for i, n, s, c in names[start:first_graph + 2]:
    key = (n, s, c is not None)
    if key == prev:
        count += 1
        continue
    if prev:
        out.append(f"{count:4d} x {prev[0]} stream={prev[1]} captured={prev[2]}")
    prev, count = key, 1
out.append(f"{count:4d} x {prev[0]} stream={prev[1]} captured={prev[2]}")
print("\n".join(out))
print("every call name in the recording:", sorted({n for _, n, _, _ in names if n and n.startswith("cu")}))
