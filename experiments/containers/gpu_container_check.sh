#!/usr/bin/env bash
# Whether a container-like run of the GPT-2 example
# gives the same counts as a plain run. The container-like run happens in a
# private mount namespace (unshare -m) where a copy of the host's libcuda on
# a tmpfs is bind-mounted over the host's file: the program loads libcuda
# from its usual path, but that file (another inode) exists in no other
# mount namespace, as with the NVIDIA container toolkit. tracer gets no
# --libcuda in either run.
#   experiments/containers/gpu_container_check.sh .device-bin/tracer [OUT]
# (Tried without a GPU with the fake libcuda: LIBCUDA=its path, and the
# command after OUT, e.g. `... OUT /path/to/driver all`.)
# Prints the launch counts of both runs, per kernel where they differ, the
# footer's libcuda_files of the container run, and exits 1 when the counts
# differ or the container run's libcuda was not probed.
set -euo pipefail
tracer=$(realpath "${1:?usage: gpu_container_check.sh TRACER [OUT]}")
out=${2:-$(mktemp -d)}
mkdir -p "$out"
here=$(cd "$(dirname "$0")/../.." && pwd)
ex=(python3 "$here/examples/transformer_inference.py" --iterations 2)
[ $# -gt 2 ] && ex=("${@:3}")

# The host's libcuda, as the dynamic loader finds it, and the file behind it.
so1=${LIBCUDA:-$(ldconfig -p | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')}
[ -n "$so1" ] || { echo "no libcuda.so.1 in ld.so.cache" >&2; exit 2; }
real=$(readlink -f "$so1")
echo "host libcuda: $so1 -> $real (inode $(stat -c %i "$real"))"

echo "== plain run"
"$tracer" -q --force -o "$out/plain.jsonl" -- "${ex[@]}"

echo "== container-like run"
ctr=$(mktemp -d)
cat > "$out/container.sh" <<SH
#!/bin/sh
set -e
mount -t tmpfs none "$ctr"
cp "$real" "$ctr/libcuda.so.copy"
mount --bind "$ctr/libcuda.so.copy" "$real"
echo "container libcuda: $real (inode \$(stat -c %i "$real"), host inode $(stat -c %i "$real"))"
exec "\$@"
SH
chmod +x "$out/container.sh"
"$tracer" -q --force -o "$out/container.jsonl" -- unshare -m "$out/container.sh" "${ex[@]}"

python3 - "$out/plain.jsonl" "$out/container.jsonl" <<'PY'
import json, sys
from collections import Counter

def load(path):
    launches, calls, footer = Counter(), Counter(), None
    for line in open(path):
        v = json.loads(line)
        t = v.get("type")
        if t == "footer":
            footer = v
        elif t == "kernel" and v.get("op") == "launch":
            launches[v.get("kernel") or "?"] += 1
        if t not in ("header", "footer", "process", None) and "name" in v:
            calls[v["name"]] += 1
    return launches, calls, footer

(pl, pc, pf), (cl, cc, cf) = load(sys.argv[1]), load(sys.argv[2])
print(f"launches: plain {sum(pl.values())}, container {sum(cl.values())}; "
      f"distinct kernels: plain {len(pl)}, container {len(cl)}")
print(f"lost records: plain {pf['lost']['total']}, container {cf['lost']['total']}")
for k in sorted(set(pl) | set(cl)):
    if pl[k] != cl[k]:
        print(f"  differs: {k[:100]}: plain {pl[k]}, container {cl[k]}")
for n in sorted(set(pc) | set(cc)):
    if pc[n] != cc[n]:
        print(f"  calls differ: {n}: plain {pc[n]}, container {cc[n]}")
files = cf.get("libcuda_files", {})
print("container run libcuda_files:", json.dumps(files))
opened = [f for f in files.get("probed", []) if f.get("found") == "opened"]
ok = pl == cl and sum(pl.values()) > 0 and len(opened) >= 1
print("RESULT:", "same launch counts, container libcuda probed" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
PY
