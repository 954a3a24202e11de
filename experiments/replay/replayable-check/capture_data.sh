#!/bin/sh
# --capture-data on the GPT-2 example (GPU machine): what is stored, how
# long the stops take, and that every copy's data is there.
#   sh experiments/replay/replayable-check/capture_data.sh .device-bin/tracer "$OUT"
set -eu
T=$1
OUT=$2
mkdir -p "$OUT"
rec=/tmp/gpt2_data.rec
/usr/bin/time -f "untraced: %e s wall" python3 examples/transformer_inference.py --iterations 3 2>&1 | tail -2
/usr/bin/time -f "--capture-data: %e s wall" "$T" -q --force --replayable --capture-data -o $rec -- \
    python3 examples/transformer_inference.py --iterations 3 2>&1 | tail -2
python3 - "$rec" <<'PY'
import json, os, sys
rec = sys.argv[1]
m = json.load(open(os.path.join(rec, "manifest.json")))
print("coverage", json.dumps(m["coverage"]))
print("data", json.dumps(m["data"]))
n = {"h2d": 0, "h2d_data": 0, "d2h": 0, "d2h_data": 0, "copy_data": 0, "errors": {}}
with open(os.path.join(rec, "trace.jsonl")) as f:
    for line in f:
        v = json.loads(line)
        if v.get("type") == "copy_data":
            n["copy_data"] += 1
            if "data" in v:
                b = os.path.getsize(os.path.join(rec, "data", v["data"]))
                assert b == v["size"], (b, v)
        d = v.get("direction")
        if d in ("h2d", "d2h"):
            n[d] += 1
            if "data" in v:
                n[d + "_data"] += 1
                assert os.path.getsize(os.path.join(rec, "data", v["data"])) == v["size"], v
            if "data_error" in v:
                n["errors"][v["data_error"]] = n["errors"].get(v["data_error"], 0) + 1
print("lines", json.dumps(n))
PY
du -sh $rec $rec/data $rec/images
