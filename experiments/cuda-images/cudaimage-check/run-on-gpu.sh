#!/bin/bash
# Runs cudaimage-check over every library of the GPU machine's PyTorch
# install that has a .nv_fatbin section, and compares with cuobjdump:
# cubin/PTX counts (cuobjdump -lelf -lptx) for all of them, and every
# kernel's parameter layout (cuobjdump -elf, canonicalized by
# canon_cuobjdump.py) for the smaller ones. Run from a folder holding the
# cudaimage-check binary and canon_cuobjdump.py; writes to $OUT.
set -u
export PATH=/usr/local/cuda-13.0/bin:/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O/lay $O/ref
TL=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')/lib
NV=$(python3 -c 'import torch,os;print(os.path.join(os.path.dirname(os.path.dirname(torch.__file__)),"nvidia"))')
FILES=""
for f in $TL/*.so* $(find $NV -name '*.so*' | sort); do
  readelf -SW $f 2>/dev/null | grep -q ' \.nv_fatbin ' && FILES="$FILES $f"
done
echo "$FILES" | tr ' ' '\n' | grep . > $O/files.txt
# cuobjdump's counts, 8 at a time
cat $O/files.txt | xargs -P 8 -I{} sh -c 'e=$(timeout 200 cuobjdump -lelf {} 2>/dev/null | grep -c "^ELF file"); p=$(timeout 200 cuobjdump -lptx {} 2>/dev/null | grep -c "^PTX file"); echo "{} $e $p"' > $O/cuobjdump-counts.txt &
# full layouts from cuobjdump -elf for the smaller libraries
for f in $TL/libtorch_nvshmem.so $(grep -E 'libcudnn_cnn|libcufftw|libcufft\.so' $O/files.txt) $TL/libtorch_cuda_linalg.so; do
  n=$(basename $f); (set -o pipefail; timeout 200 cuobjdump -elf $f 2>/dev/null | python3 canon_cuobjdump.py > $O/ref/$n.layouts; echo "$n cuobjdump-elf rc=$?" >> $O/ref-rc.txt) &
done
s=$(date +%s%N); ./cudaimage-check --layouts $O/lay $FILES > $O/check.jsonl 2> $O/check.err
echo "check rc=$? in $(( ($(date +%s%N) - s) / 1000000 )) ms" > $O/check.time
wait
cd $O && for r in ref/*.layouts; do n=$(basename $r); echo "$n: cuobjdump $(wc -l < $r) kernels, ours $(wc -l < lay/$n), diff lines $(diff $r lay/$n | grep -c '^[<>]')"; done > layout-compare.txt
tar czf $O/layouts.tar.gz ref $(for r in ref/*.layouts; do echo lay/$(basename $r); done) && rm -rf $O/lay $O/ref
cat ref-rc.txt layout-compare.txt cuobjdump-counts.txt check.time check.err; cut -c1-300 check.jsonl
