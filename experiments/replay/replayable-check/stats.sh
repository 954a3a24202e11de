set -x
for m in "" "--replayable"; do
  o=/tmp/st.jsonl; [ -n "$m" ] && o=/tmp/st.rec
  taskset -c 0,1,3-15 .device-bin/tracer -q --force $m --bpf-stats -o $o -- taskset -c 2 python3 bench/workloads.py --workloads gen --iterations 10 | grep -c BENCH
  f=$o; [ -d $o ] && f=$o/trace.jsonl
  tail -1 $f | python3 -c "import json,sys; v=json.load(sys.stdin); print('MODE [$m]', {k:(s['runs'],round(s['ns_per_run'])) for k,s in (v['bpf_stats'] or {}).items()}, 'lost', v['lost']['total'], 'collector', v['collector'], 'replay', v.get('replay'))"
  ls -la $f
done
python3 bench/overhead.py --tracer .device-bin/tracer --reps 8 --iterations 10 --workloads gen --modes untraced,tracer,tracer_replayable --out $OUT/bench 2>&1 | tail -8
