#!/usr/bin/env bash
# Whether `tracer agent --system` (NVML on)
# counts the launches of a process started after it that loads a libcuda
# file the agent did not probe at start (a container-like copy: a private
# mount namespace where a tmpfs copy of the host's libcuda is bind-mounted
# over the host's file), exactly as `tracer record` counts a plain run of
# the same program; and the agent keeps answering (it must not stop itself
# on its own opens of libcuda, nor NVML's).
#   experiments/containers/gpu_agent_container_check.sh .device-bin/tracer [OUT]
# Prints both counts and the agent's libcuda metrics; exits 1 on a mismatch.
set -euo pipefail
tracer=$(realpath "${1:?usage: gpu_agent_container_check.sh TRACER [OUT]}")
out=${2:-$(mktemp -d)}
mkdir -p "$out"
here=$(cd "$(dirname "$0")/../.." && pwd)
ex=(python3 "$here/examples/launch_loop.py" --iterations 2 --launches 5000)
so1=$(ldconfig -p | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')
[ -n "$so1" ] || { echo "no libcuda.so.1 in ld.so.cache" >&2; exit 2; }
real=$(readlink -f "$so1")

echo "== plain run (tracer record)"
"$tracer" -q --force -o "$out/plain.jsonl" -- "${ex[@]}"
plain=$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if (v := json.loads(l)).get("type") == "kernel" and v.get("op") == "launch"))' "$out/plain.jsonl")

echo "== agent --system, then a container-like run"
port=$((20000 + RANDOM % 20000))
"$tracer" agent --listen "127.0.0.1:$port" --system 2> "$out/agent.stderr" &
agent=$!
trap 'kill -TERM $agent 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf "127.0.0.1:$port/metrics" > /dev/null && break; sleep 0.2; done
ctr=$(mktemp -d)
cat > "$out/container.sh" <<SH
#!/bin/sh
set -e
mount -t tmpfs none "$ctr"
cp "$real" "$ctr/libcuda.so.copy"
mount --bind "$ctr/libcuda.so.copy" "$real"
exec "\$@"
SH
chmod +x "$out/container.sh"
unshare -m "$out/container.sh" "${ex[@]}" > "$out/container.stdout" &
pid=$!
wait $pid
sleep 2
curl -sf -m 10 "127.0.0.1:$port/metrics" > "$out/metrics.txt"
agent_n=$(awk -v p="pid=\"$pid\"" 'index($0, "tracer_kernel_launches_total{") == 1 && index($0, p) { s += $NF } END { print s + 0 }' "$out/metrics.txt")
grep -E '^tracer_libcuda|^tracer_lost_records|^tracer_power_available' "$out/metrics.txt" || true
kill -TERM $agent; wait $agent || true; trap - EXIT
tail -3 "$out/agent.stderr"
echo "launches: tracer record (plain) $plain, agent (container-like, pid $pid) $agent_n"
[ "$plain" -gt 0 ] && [ "$plain" = "$agent_n" ] && echo "RESULT: same launch counts" && exit 0
echo "RESULT: MISMATCH"; exit 1
