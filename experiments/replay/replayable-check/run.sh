#!/bin/sh
# Records the examples with --replayable on the GPU machine and keeps what
# tells whether the recording is complete: the capture coverage (footer
# `replay`, manifest `coverage`), the images' sizes and kinds, and the
# trace itself (gzipped). Used for docs/replayable.md:
#   sh experiments/replay/replayable-check/run.sh .device-bin/tracer "$OUT"
set -eu
T=$1
OUT=$2
mkdir -p "$OUT"
for ex in simple_inference transformer_inference; do
    rec=/tmp/$ex.rec
    args=""
    [ $ex = transformer_inference ] && args="--iterations 3"
    /usr/bin/time -f "$ex: %e s wall, %M KiB max RSS (tracer)" \
        "$T" -q --force --replayable -o $rec -- python3 examples/$ex.py $args 2>&1 | tail -3
    python3 - "$rec" "$OUT/$ex" <<'PY'
import json, os, sys
rec, out = sys.argv[1], sys.argv[2]
m = json.load(open(os.path.join(rec, "manifest.json")))
imgs = m["images"]
cov = m["coverage"]
print(json.dumps(cov, indent=1))
print("images:", len(imgs), "bytes:", sum(i["bytes"] for i in imgs),
      "kinds:", {k: sum(1 for i in imgs if i["kind"] == k) for k in set(i["kind"] for i in imgs)},
      "kernels:", sum(len(i["kernels"]) for i in imgs), "layouts:", m["layouts"],
      "errors:", [i.get("layout_error") for i in imgs if i.get("layout_error")][:3])
# kernels launched vs layouts known: the launches without parameters, by kernel
miss = {}
with open(os.path.join(rec, "trace.jsonl")) as f:
    for line in f:
        if '"params_error"' in line:
            v = json.loads(line)
            k = (v.get("kernel") or v["args"].get("f"), v["params_error"][:40])
            miss[k] = miss.get(k, 0) + 1
for (k, e), n in sorted(miss.items(), key=lambda x: -x[1])[:20]:
    print(f"missing {n:6d} {e}: {str(k)[:120]}")
slim = dict(m)
slim["images"] = [{k: v for k, v in i.items() if k != "kernels"} | {"kernel_count": len(i["kernels"])} for i in imgs]
json.dump(slim, open(out + ".manifest.json", "w"), indent=1)
PY
    gzip -c $rec/trace.jsonl > "$OUT/$ex.trace.jsonl.gz"
    du -sh $rec $rec/images
done
