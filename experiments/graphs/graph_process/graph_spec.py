"""Writes the spec graph_replay_min reads: the kernel launches a program
captured into its first CUDA graph (between cuStreamBeginCapture and
cuStreamEndCapture, in order), with their images, parameter bytes and the
device allocations their pointers may point into; and (`seq` lines) the
program's other work in recorded order, as replay's pass runs it: launches
outside the capture, event records and waits, synchronizations and the
launches of that graph, with the streams and events they name.

usage: python3 graph_spec.py REC_DIR > spec.txt
"""
import json
import os
import sys

rec = sys.argv[1]
path = os.path.join(rec, "trace.jsonl")
handles = {}   # kernel/function handle -> (module/library handle, name)
images = {}    # module/library handle -> image sha256
allocs = []
streams = []   # (flags, priority) of every stream the program created
loads = []     # every image load, in order
launches = []
before = []    # the launches before the capture (the program's warm-up and set-up)
seq = []       # the program's work outside its captures, in order: (what, line)
stream_flags = {}  # stream handle -> (flags, priority)
event_flags = {}   # event handle -> flags
first_exec = None
capturing = False
LOADS = {"cuLibraryLoadData", "cuModuleLoadData", "cuLibraryLoadFromFile", "cuModuleLoad", "cuModuleLoadDataEx",
         "cuModuleLoadFatBinary"}
for line in open(path):
    j = json.loads(line)
    name, a = j.get("name"), j.get("args") or {}
    if name in LOADS and j.get("image"):
        images[a.get("library") or a.get("module")] = j["image"]
        loads.append(j["image"])
    elif name in ("cuStreamCreate", "cuStreamCreateWithPriority") and j.get("ret") == 0:
        streams.append((int(str(a.get("flags", a.get("Flags", 0))), 0), a.get("priority", 0)))
    elif name == "cuLibraryGetKernel":
        handles[j["handle"]] = (a["library"], j["kernel"])
    elif name == "cuModuleGetFunction":
        handles[j["handle"]] = (a["hmod"], j["kernel"])
    elif name == "cuKernelGetFunction":
        k = handles.get(a.get("kernel"))
        if k:
            handles[j["handle"]] = k
    elif name == "cuMemAlloc_v2" and j.get("ret") == 0:
        allocs.append((int(j["ptr"], 16), j["size"]))
    elif name and name.startswith("cuStreamBeginCapture"):
        capturing = not launches
        if capturing:
            seq.append(("capture", a.get("hStream") or j.get("stream") or "0x0"))
    elif name and name.startswith("cuStreamEndCapture"):
        capturing = False
    elif capturing and j.get("type") == "kernel" and j.get("op") == "launch" and j.get("params"):
        launches.append(j)
    elif not launches and j.get("type") == "kernel" and j.get("op") == "launch" and j.get("params"):
        before.append(j)
    if j.get("ret", 0) != 0 or j.get("capture") is not None:
        continue
    stream = j.get("stream") or a.get("hStream") or "0x0"
    if name in ("cuStreamCreate", "cuStreamCreateWithPriority") and a.get("phStream"):
        stream_flags[a["phStream"]] = (int(str(a.get("flags", a.get("Flags", 0))), 0), a.get("priority", 0))
        seq.append(("streamcreate", a["phStream"]))
    elif name == "cuEventCreate" and a.get("phEvent"):
        event_flags[a["phEvent"]] = int(str(a.get("Flags", 0)), 0)
        seq.append(("eventcreate", a["phEvent"]))
    elif j.get("type") == "kernel" and j.get("op") == "launch" and j.get("params"):
        seq.append(("launch", j))
    elif name and name.startswith("cuEventRecord"):
        seq.append(("record", f"{j.get('event') or a.get('hEvent')} {stream}"))
    elif name and name.startswith("cuStreamWaitEvent"):
        seq.append(("wait", f"{stream} {j.get('event') or a.get('hEvent')}"))
    elif j.get("op") == "ctx_synchronize":
        seq.append(("ctxsync", ""))
    elif j.get("op") == "stream_synchronize":
        seq.append(("streamsync", stream))
    elif j.get("op") == "event_synchronize":
        seq.append(("eventsync", a.get("hEvent")))
    elif name and name.startswith("cuGraphLaunch"):
        e = j.get("graph_exec") or a.get("hGraphExec")
        first_exec = first_exec or e
        if e == first_exec:
            seq.append(("graph", stream))
ids = {}
kernels = {}
for l in launches + before + [x for w, x in seq if w == "launch"]:
    mod, kname = handles[l["func"]]
    sha = images[mod]
    if sha not in ids:
        ids[sha] = len(ids)
        print(f"image {ids[sha]} {os.path.join(rec, 'images', sha)}")
    if (sha, kname) not in kernels:
        kernels[(sha, kname)] = len(kernels)
        print(f"kernel {kernels[(sha, kname)]} {ids[sha]} {kname}")
for sha in dict.fromkeys(loads):
    if sha not in ids:
        print(f"other_image {os.path.join(rec, 'images', sha)}")
for f, p in streams:
    print(f"stream {f} {p}")
for p, s in allocs:
    print(f"alloc {p:#x} {s}")
def key(l):
    mod, kname = handles[l["func"]]
    return (kernels[(images[mod], kname)], *l["grid"], *l["block"], l.get("shared_mem", 0), l["params"])


for what, ls in (("launch", launches), ("before", before)):
    for l in ls:
        print(what, " ".join(str(x) for x in key(l)))
for h, (f, p) in stream_flags.items():
    print(f"seqstream {h} {f} {p}")
for h, f in event_flags.items():
    print(f"seqevent {h} {f}")
for what, x in seq:
    if what == "launch":
        print("seq launch", " ".join(str(v) for v in key(x)), x.get("stream") or "0x0")
    else:
        print(f"seq {what} {x}".rstrip())
# how the launches before the capture differ from the captured ones
cap = set(key(l) for l in launches)
pre = [key(l) for l in before]
print(f"before the capture: {len(pre)} launches, {len(set(pre))} distinct; {sum(k in cap for k in pre)} equal to a captured "
      f"launch; captured: {len(cap)} distinct", file=sys.stderr)
for k in sorted(set(pre) - cap)[:6]:
    near = [c for c in cap if c[:8] == k[:8]]
    print(f"  not captured: kernel {k[0]} grid {k[1:4]} block {k[4:7]} shm {k[7]} params {k[8][:96]}"
          + (f"\n     captured: params {near[0][8][:96]}" if near else ""), file=sys.stderr)
print(f"{len(launches)} launches, {len(kernels)} kernels, {len(ids)} images, {len(allocs)} allocations; "
      f"outside the capture: {len(seq)} ops ({sum(w == 'graph' for w, _ in seq)} launches of the graph)",
      file=sys.stderr)
