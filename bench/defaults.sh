#!/usr/bin/env bash
# Issue 15's configurations at the default flags, two coral binaries
# alternated in each round (the machine is shared and noisy: compare the
# ratio within a round). OLD_FLAGS reproduces an older default on a newer
# binary, e.g. OLD_FLAGS="--envs-per-group 1" for the default before auto;
# NEW_FLAGS is added to the new binary's (the same flag, to compare the
# per-message cost alone).
# Usage: bench/defaults.sh OLD_CORAL NEW_CORAL [ROUNDS]
set -uo pipefail
old=$1 new=$2 rounds=${3:-3}
old_flags=${OLD_FLAGS:-}
new_flags=${NEW_FLAGS:-}
rate() { "$@" --no-baseline | awk '/^sampler:/ {print $9}'; }
configs=(
  "noop 8/4/2|--env noop --num-envs 8 --batch-size 4 --threads 2 --steps 3000000"
  "noop 64/32/2|--env noop --num-envs 64 --batch-size 32 --threads 2 --steps 6000000"
  "delay 10us 16/8/2|--env delay --env-arg mean_us=10 --env-arg std_us=0 --num-envs 16 --batch-size 8 --threads 2 --steps 300000"
  "delay 100+-100us 16/4/2|--env delay --env-arg mean_us=100 --env-arg std_us=100 --num-envs 16 --batch-size 4 --threads 2 --steps 30000"
)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for ((i = 1; i <= rounds; ++i)); do
  for c in "${configs[@]}"; do
    name=${c%%|*} flags=${c#*|}
    # shellcheck disable=SC2086
    a=$(rate "$old" bench $flags $old_flags)
    # shellcheck disable=SC2086
    b=$(rate "$new" bench $flags $new_flags)
    echo "round $i, load $(cut -d' ' -f1 /proc/loadavg): $name: old $a, new $b, new/old $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", b / a}')"
  done
done
