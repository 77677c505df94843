#!/usr/bin/env bash
# Distributed runs (docs/distributed.md) on one machine, as BENCHMARKS.md's
# "Distributed training" section records them:
#
# 1. the wire: bytes, messages per env step and the weights broadcast's
#    latency, from the learner's progress lines, for PPO and DQN on cartpole
#    with 2 sampler ranks;
# 2. sampling throughput of 2 sampler ranks of 1 thread against 1 sampler
#    rank of 2 threads, and against one process of 2 threads, on `delay`
#    (every config samples with 2 threads in all, on 2 cores), alternating,
#    ROUNDS rounds, each as a fraction of the ideal (threads / step time).
#
# Usage: bench/distributed.sh [BUILD_DIR] [ROUNDS]   (default build/release, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
rounds=${2:-3}
coral="$(pwd)/$build/apps/coral"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi=(mpirun --oversubscribe)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"

# The wire, from the last full progress line of a 20 s run.
wire() {
  local name=$1; shift
  "${mpi[@]}" -np 3 "$coral" train --distributed --env cartpole --keep-going --no-run-dir --progress-seconds 5 \
    --total-steps 100000000 "$@" > "$name.log" 2>&1 &
  local pid=$!
  sleep 21
  kill -INT "$pid"; wait "$pid" || true
  python3 - "$name" "$name.log" <<'EOF'
import re, sys
name, path = sys.argv[1], sys.argv[2]
lines = [l for l in open(path) if l.startswith('[') and '| ranks' in l]
l = lines[-2] if len(lines) > 1 else lines[-1]  # the last full 5 s window
steps = float(re.search(r'steps +\d+ \( *(\d+)/s\)', l).group(1))
mb, msg, lat = re.search(r'wire ([0-9.]+) MB/s ([0-9]+) msg/s, weights ([0-9]+) us', l).groups()
print(f"{name}: {steps:.0f} env steps/s, {float(mb)*1e6/steps:.1f} bytes and {float(msg)/steps:.4f} messages "
      f"per env step, weights broadcast {lat} us from publish to the samplers' cell")
EOF
}
echo "== the wire, cartpole, 1 learner + 2 sampler ranks of 8 envs"
wire ppo --algo ppo
wire dqn --algo dqn
wire dqn-publish-every-8 --algo dqn --publish-every 8

# Sampling throughput on delay: every config runs 16 envs on 2 sampling
# threads in all; the learner is PPO with 1 epoch, lag 2, so it rarely holds
# the samplers. Steps/s = env_steps / wall_seconds of the final JSON line.
mean_us=500
steps=40000
d=(--env delay --env-arg mean_us=$mean_us --env-arg std_us=0 --horizon 32 --epochs 1 --max-policy-lag 2
   --total-steps $steps --keep-going --no-run-dir --progress-seconds 0)
rate() { python3 -c "import json,sys; j=json.loads([l for l in sys.stdin if l.startswith('{')][-1]); print(f\"{j['env_steps']/j['wall_seconds']:.0f}\")"; }
ideal=$((2 * 1000000 / mean_us))
echo "== delay ${mean_us} us, 16 envs and 2 sampling threads in all, ideal $ideal steps/s; $rounds rounds, alternating"
for r in $(seq "$rounds"); do
  one_process=$("$coral" train "${d[@]}" --num-envs 16 --threads 2 | rate)
  one_rank=$("${mpi[@]}" -np 2 "$coral" train --distributed "${d[@]}" --num-envs 16 --threads 2 2>/dev/null | rate)
  two_ranks=$("${mpi[@]}" -np 3 "$coral" train --distributed "${d[@]}" --num-envs 8 --threads 1 2>/dev/null | rate)
  python3 -c "
i=$ideal
print(f'round $r: one process {$one_process} ({$one_process/i:.1%}), 1 sampler rank x 2 threads {$one_rank} ({$one_rank/i:.1%}), '
      f'2 sampler ranks x 1 thread {$two_ranks} ({$two_ranks/i:.1%}); 2 ranks / 1 rank = {$two_ranks/$one_rank:.3f}')"
done
