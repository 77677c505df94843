#!/usr/bin/env bash
# OpenBLAS's kernel choice (OPENBLAS_CORETYPE) measured on coral's learners:
# each run below under each core type, taking turns within a round, the
# same binary. Prints one line per run: round, core type, run, wall and
# user+sys CPU seconds, env steps and updates.
#
#   bench/blas_core.sh                  (CORES="default Prescott SkylakeX Haswell", ROUNDS=3, BUSY=0)
# "default" leaves the variable unset: OpenBLAS chooses by the CPU's model,
# and `coral` has it choose again where it chose its generic kernels
# (learners/blas_core.hpp). "Prescott" is those generic kernels. An entry
# with '=' is an environment setting instead (CORES="default
# OPENBLAS_NUM_THREADS=2": OpenBLAS's thread count against coral's one).
# BUSY=N runs N busy loops at nice 19 throughout, as a low-priority build
# beside the runs would (CI builds the sanitizer trees beside its tests).
set -euo pipefail
cd "$(dirname "$0")/.."
coral=${CORAL:-build/release/apps/coral}
cores=${CORES:-"default Prescott SkylakeX Haswell"}
rounds=${ROUNDS:-3}
busy=${BUSY:-0}
field() { grep -o "\"$2\":[^,}]*" <<<"$1" | head -1 | cut -d: -f2; }
runs=(
  "ppo-cartpole|train --no-run-dir --progress-seconds 0 --seed 1"
  "ppo-lstm-memory|train --config configs/memory-ppo-lstm.toml --seed 1 --total-steps 60000 --no-run-dir --progress-seconds 0"
  "r2d2-cartpole|train --config configs/cartpole-r2d2.toml --seed 1 --total-steps 40000 --keep-going --no-run-dir --progress-seconds 0"
  "ppo-halfcheetah|train --config configs/halfcheetah-ppo.toml --seed 1 --total-steps 50000 --no-run-dir --progress-seconds 0"
)
tmp=$(mktemp)
hogs=()
trap 'rm -f "$tmp"; if [ ${#hogs[@]} -gt 0 ]; then kill "${hogs[@]}"; fi' EXIT
for _ in $(seq 1 "$busy"); do
  nice -n 19 bash -c 'while :; do :; done' &
  hogs+=($!)
done
for round in $(seq 1 "$rounds"); do
  for run in "${runs[@]}"; do
    name=${run%%|*}
    read -r -a args <<<"${run#*|}"
    for core in $cores; do
      envs=()
      if [[ "$core" == *=* ]]; then
        envs=("$core")
      elif [ "$core" != default ]; then
        envs=(OPENBLAS_CORETYPE="$core")
      fi
      out=$(/usr/bin/time -f 'time %e %U %S' -o "$tmp" env "${envs[@]}" "$coral" "${args[@]}" 2> /dev/null)
      json=$(grep '^{' <<<"$out" | tail -1 || true)
      read -r _ wall user sys < "$tmp"
      printf 'round %s %-22s %-16s wall %6.2f s cpu %6.2f s steps %s updates %s\n' "$round" "$core" "$name" \
        "$wall" "$(echo "$user + $sys" | bc)" "$(field "$json" env_steps)" "$(field "$json" updates)"
    done
  done
done
