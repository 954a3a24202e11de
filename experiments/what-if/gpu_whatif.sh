#!/usr/bin/env bash
# What-if on another GPU: the prediction against the measured run (docs/what-if.md). Two device
# calls, each ≤ 8 min, as root from the repo root, with .device-bin/{tracer,
# replay,libtracer_cupti.so} carried (`cargo xtask build --release` and `cargo build --release -p replay` (the xtask builds no replay), then
# copied there):
#
#   part h100 (kind nvidia-h100-x1):  OUT=$OUT bash experiments/what-if/gpu_whatif.sh h100
#     (SKIP_SELF=1: record and pack only, without the same-GPU replay)
#     records the two workloads of examples/whatif_workloads.py (GPT-2
#     generation at batch 1, GPT-2 training steps at batch 8) with
#     `tracer record --replayable --capture-data --gpu-timestamps --compress
#     zstd`, replays each on the same H100 (the method's error on its own GPU:
#     replay's in-context durations → `tracer whatif` against the recording
#     itself), and packs each recording without its code images (81 MB for
#     GPT-2: the H200 machine has the same PyTorch, whose images are taken
#     again from its own recording, by SHA-256) into
#     $OUT/h100_{generate,train}.rec.tgz.
#   Then here: mkdir -p whatif-h100 && cp FILES_AT/h100_*.rec.tgz whatif-h100/
#   part h200 (kind nvidia-h200):     OUT=$OUT bash experiments/what-if/gpu_whatif.sh h200 [DIR]
#     (DIR: where the h100 part's tarballs are, default whatif-h100/) records
#     the same workloads on the H200 the same way (the measured truth, and the
#     images), completes the H100 recordings' images from them, replays each
#     H100 recording on the H200 (`--mode sequence`: its kernels' H200
#     durations in context, WORKLOAD.sequence-durations.json), predicts with
#     `tracer whatif H100.rec --durations … --against H200.rec`, and, as a
#     control, with durations calibrated from the H200 trace itself (the
#     model's error when the durations are exact). The table is printed last;
#     $OUT/whatif_table.md holds it, $OUT/whatif_results.tgz every JSON.
set -uo pipefail
part=${1:?usage: gpu_whatif.sh h100|h200 [DIR]}
T=$(realpath .device-bin/tracer)
R=$(realpath .device-bin/replay)
OUT=${OUT:-/tmp/whatif-out}
W=/tmp/whatif
mkdir -p "$OUT" "$W"
log=$OUT/whatif_$part.log
# WORKLOADS="train" runs one of them, WL_ARGS="--batch 32" are its arguments (both
# parts alike); EXTRA_IMAGES="SHA … | small:BYTES" (part h100) packs these
# code images with the recordings (those the other GPU's run of the program does
# not load, so that its recording cannot complete them: the h200 part names them).
read -r -a WORKLOADS <<< "${WORKLOADS:-generate train}"

record() { # $1: workload, $2: recording directory
    rm -rf "$2"
    (cd examples && timeout 170 "$T" record --replayable --capture-data --gpu-timestamps --compress zstd -q \
        --force -o "$2" -- python3 whatif_workloads.py "$1" ${WL_ARGS:-})
    echo "record $1 exit: $? ($(du -sh "$2" 2>/dev/null | cut -f1), images $(du -sh "$2/images" 2>/dev/null | cut -f1))"
}

replay_seq() { # $1: recording, $2: report path; writes ${2%.json}.sequence-durations.json
    timeout 200 "$R" "$1" --mode sequence --iterations 3 --warmup 1 --report "$2" > "${2%.json}.txt" 2>&1
    echo "replay exit: $?"
    grep -E "coverage|launches|identical|differ|busy|kernels|copies|error" "${2%.json}.txt" | head -20
}

h100() {
    nvidia-smi -L
    for w in "${WORKLOADS[@]}"; do
        echo "## $w: record on the H100"
        record "$w" "$W/h100_$w.rec"
        "$R" plan "$W/h100_$w.rec" | grep -E "coverage|launches" | head -4
        if [ -z "${SKIP_SELF:-}" ]; then
            echo "## $w: replay on the same H100 (the method's own error)"
            replay_seq "$W/h100_$w.rec" "$W/${w}_replay_h100.json"
            "$T" whatif "$W/h100_$w.rec" --durations "$W/${w}_replay_h100.sequence-durations.json" \
                --against "$W/h100_$w.rec" | tail -n 20
        fi
        echo "## $w: pack without images"
        extra=()
        for sha in ${EXTRA_IMAGES:-}; do
            case $sha in
                small:*) # every image under that many bytes
                    while IFS= read -r f; do extra+=("h100_$w.rec/images/$(basename "$f")"); done \
                        < <(find "$W/h100_$w.rec/images" -type f -size -"${sha#small:}"c) ;;
                *) [ -f "$W/h100_$w.rec/images/$sha" ] && extra+=("h100_$w.rec/images/$sha") ;;
            esac
        done
        (cd "$W" && tar --exclude="h100_$w.rec/images" -cf "$W/h100_$w.tar" "h100_$w.rec" \
            && { [ ${#extra[@]} -eq 0 ] || tar -rf "$W/h100_$w.tar" "${extra[@]}"; } \
            && gzip -c "$W/h100_$w.tar" > "$OUT/h100_$w.rec.tgz")
        echo "packed with ${#extra[@]} code images: ${extra[*]}"
        ls -l "$OUT/h100_$w.rec.tgz"
        size=$(stat -c %s "$OUT/h100_$w.rec.tgz")
        [ "$size" -lt 16000000 ] || echo "WARNING: $OUT/h100_$w.rec.tgz is over 16 MB: it will not come back"
    done
    echo "## done: the recordings are $OUT/h100_generate.rec.tgz and $OUT/h100_train.rec.tgz"
}

fill_images() { # $1: recording lacking images, $2: recording of the same program with them
    python3 - "$1" "$2" <<'PY'
import json, os, shutil, sys
dst, src = sys.argv[1], sys.argv[2]
m = json.load(open(os.path.join(dst, "manifest.json")))
os.makedirs(os.path.join(dst, "images"), exist_ok=True)
have = copied = 0
missing = []
for im in m["images"]:
    p = os.path.join(dst, im["file"])
    q = os.path.join(src, im["file"])
    if os.path.exists(p):
        have += 1
    elif os.path.exists(q):
        shutil.copyfile(q, p)
        copied += 1
    else:
        missing.append(im["file"])
print(f"images of {os.path.basename(dst)}: {len(m['images'])}, {copied} taken from {os.path.basename(src)} "
      f"(same SHA-256), {have} present, {len(missing)} missing {missing[:3]}")
PY
}

h200() {
    local dir=${1:-whatif-h100}
    nvidia-smi -L
    for w in "${WORKLOADS[@]}"; do
        echo "## $w: unpack the H100 recording"
        rm -rf "$W/h100_$w.rec"
        tar -xzf "$dir/h100_$w.rec.tgz" -C "$W" || { echo "no $dir/h100_$w.rec.tgz"; continue; }
        echo "## $w: record on the H200 (the measured truth)"
        record "$w" "$W/h200_$w.rec"
        fill_images "$W/h100_$w.rec" "$W/h200_$w.rec"
        echo "## $w: replay the H100 recording on the H200"
        replay_seq "$W/h100_$w.rec" "$OUT/${w}_replay_h200.json"
        local d="$OUT/${w}_replay_h200.sequence-durations.json"
        echo "## $w: what-if with the replay's H200 durations"
        "$T" whatif "$W/h100_$w.rec" --durations "$d" --against "$W/h200_$w.rec" --json > "$OUT/${w}_whatif.json"
        "$T" whatif "$W/h100_$w.rec" --durations "$d" --against "$W/h200_$w.rec"
        echo "## $w: control: durations calibrated from the H200 trace itself"
        "$T" calibrate "$W/h200_$w.rec" -o "$OUT/${w}_h200_calibrated.json" --force
        "$T" whatif "$W/h100_$w.rec" --durations "$OUT/${w}_h200_calibrated.json" --against "$W/h200_$w.rec" \
            --json > "$OUT/${w}_whatif_control.json"
    done
    python3 - "$OUT" "${WORKLOADS[@]}" <<'PY' | tee "$OUT/whatif_table.md"
import json, os, sys
out, names = sys.argv[1], sys.argv[2:]
def ms(ns): return f"{ns / 1e6:.3f}"
def pct(x): return "–" if x is None else f"{x:+.1f} %"
print("| workload | figure | H100 recorded (ms) | H200 predicted (ms) | H200 measured (ms) | error | error, exact durations | error if unchanged |")
print("|---|---|---|---|---|---|---|---|")
worst = {}
for w in names:
    try:
        v = json.load(open(os.path.join(out, f"{w}_whatif.json")))
        c = json.load(open(os.path.join(out, f"{w}_whatif_control.json")))
    except (OSError, ValueError) as e:
        print(f"| {w} | not run ({e}) | | | | | | |")
        continue
    ctrl = {r["what"]: r for r in c["comparison"]["rows"]}
    for r in v["comparison"]["rows"]:
        print(f"| {w} | {r['what'].strip()} | {ms(r['recorded_ns'])} | {ms(r['predicted_ns'])} | {ms(r['actual_ns'])} "
              f"| {pct(r['error_pct'])} | {pct(ctrl.get(r['what'], {}).get('error_pct'))} | {pct(r['unchanged_error_pct'])} |")
    worst[w] = v["comparison"]["worst_error_pct"]
    s = v["prediction"]["sources"]
    print(f"| {w} | sources | {s['ops']} ops, kernels {s['kernels_exact']} exact / {s['kernels_by_name']} by name / "
          f"{s['kernels_kept']} kept | iterations {v['comparison']['iterations']} | | | | |")
for w, x in worst.items():
    print(f"\n{w}: worst error (iteration time and busy, GPU busy, families over 5 % of busy) "
          f"{'–' if x is None else f'{x:.1f} %'}: {'within' if x is not None and x <= 10 else 'NOT within'} 10 %")
PY
    (cd "$OUT" && tar -czf whatif_results.tgz ./*.json ./*.jsonl ./*.txt && rm -f ./*.json ./*.jsonl ./*.txt)
}

case $part in
h100) h100 > "$log" 2>&1 ;;
h200) h200 "${2:-}" > "$log" 2>&1 ;;
*) echo "usage: gpu_whatif.sh h100|h200 [DIR]"; exit 2 ;;
esac
tail -c 9000 "$log"
