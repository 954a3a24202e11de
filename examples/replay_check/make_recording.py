#!/usr/bin/env python3
"""Finish the hand-written recording that replay_check wrote into DIR:
name the image and the host bytes by their SHA-256 (images/<sha>, data/<sha>),
substitute the placeholders in trace.jsonl and write manifest.json with the
kernels' parameter layouts (from the comments in replay_check.cu).

usage: make_recording.py DIR FATBIN
"""
import hashlib
import json
import os
import shutil
import sys

LAYOUTS = [
    {"name": "rc_fill", "param_size": 16, "params": [[0, 8], [8, 4], [12, 4]]},
    {"name": "rc_axpy", "param_size": 32, "params": [[0, 8], [8, 8], [16, 8], [24, 4], [28, 4]]},
    {"name": "rc_struct", "param_size": 28, "params": [[0, 24], [24, 4]]},
    {"name": "rc_block_sum", "param_size": 20, "params": [[0, 8], [8, 8], [16, 4]]},
    {"name": "rc_cluster", "param_size": 20, "params": [[0, 8], [8, 8], [16, 4]]},
]


def sha(b):
    return hashlib.sha256(b).hexdigest()


def main():
    d, fatbin = sys.argv[1], sys.argv[2]
    img = open(fatbin, "rb").read()
    s_img = sha(img)
    os.makedirs(f"{d}/images", exist_ok=True)
    os.makedirs(f"{d}/data", exist_ok=True)
    open(f"{d}/images/{s_img}", "wb").write(img)
    subst = {"@IMAGE@": s_img}
    total = 0
    for tag, raw in [("@DATA_B@", "raw_b.bin"), ("@DATA_SUMS@", "raw_sums.bin"), ("@DATA_RES@", "raw_res.bin")]:
        b = open(f"{d}/{raw}", "rb").read()
        subst[tag] = sha(b)
        open(f"{d}/data/{sha(b)}", "wb").write(b)
        os.remove(f"{d}/{raw}")
        total += len(b)
    text = open(f"{d}/trace.jsonl").read()
    for k, v in subst.items():
        assert k in text, k
        text = text.replace(k, v)
    open(f"{d}/trace.jsonl", "w").write(text)
    launches = sum(1 for l in text.splitlines() if '"op":"launch"' in l)
    manifest = {
        "format": "tracer-recording",
        "schema_version": 1,
        "tracer_version": "hand-written (examples/replay_check)",
        "trace": "trace.jsonl",
        "capture_data": True,
        "images": [{"sha256": s_img, "file": f"images/{s_img}", "bytes": len(img), "kind": "fatbin", "loads": 1, "kernels": LAYOUTS}],
        "data": {"files": 3, "bytes": total, "skipped_over_cap": 0, "cap_bytes": 8589934592},
        "coverage": {"image_loads": 1, "images_captured": 1, "image_errors": 0, "launches": launches,
                     "params_exact": launches, "params_from_extra": 0, "params_missing": 0,
                     "params_missing_reasons": {}, "graph_launches": 0, "h2d_copies": 1, "h2d_captured": 1},
    }
    json.dump(manifest, open(f"{d}/manifest.json", "w"), indent=2)
    print(f"{d}: image {s_img[:12]}… ({len(img)} bytes), {launches} launches, {total} data bytes")


if __name__ == "__main__":
    main()
