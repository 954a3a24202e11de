#!/usr/bin/env bash
# Run as used on the GPU machine (no Rust there): next to a release tracer and
# its injection library, with the check scripts:
#   mkdir -p .dev-cupti && cp target/release/{tracer,libtracer_cupti.so} \
#     experiments/gpu-timestamps/{cupti_offsets.sh,gpu_timestamps_*.sh} scripts/gpu_timestamps_check.py .dev-cupti/
#   then there, as root:  bash .dev-cupti/SCRIPT   (outputs under $OUT)
# device call 1: CUPTI 13 offsets, where libcupti lives, first real runs
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
echo "## offsets"; bash cupti_offsets.sh 2>&1 | tee $OUT/offsets.txt
echo "## libcupti files"; ls /usr/local/ | grep -i cuda; find / -xdev -name 'libcupti.so*' 2>/dev/null | head
echo "## simple_inference --gpu-timestamps"
./tracer --gpu-timestamps --force -o $OUT/simple.jsonl -- python3 ../examples/simple_inference.py 2>&1 | tail -25
python3 gpu_timestamps_check.py $OUT/simple.jsonl
echo "## transformer --iterations 1 --gpu-timestamps"
timeout 150 ./tracer --gpu-timestamps --force -o $OUT/tr1.jsonl -- python3 ../examples/transformer_inference.py --iterations 1 2>&1 | tail -25
python3 gpu_timestamps_check.py $OUT/tr1.jsonl
grep -c '"type":"gpu"' $OUT/tr1.jsonl; grep '"type":"gpu"' $OUT/tr1.jsonl | head -3
gzip -9 $OUT/*.jsonl; ls -la $OUT
