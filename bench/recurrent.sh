#!/usr/bin/env bash
# The recurrent agents' learning runs (issue 12) with the checked-in configs:
# for each config and seed, `coral train --config configs/<name>.toml --seed S`
# into runs/recurrent/<name>-seed<S>, with the 1-minute load average before
# and after. Prints one line per run: the config, the seed, whether it was
# solved, the return of the last 100 episodes at the end, the env steps, the
# wall seconds and the loads.
#
#   bench/recurrent.sh NAME...       (e.g. cartpole-r2d2 memory-ppo-lstm; SEEDS="1 2 3")
set -euo pipefail
cd "$(dirname "$0")/.."
coral=${CORAL:-build/release/apps/coral}
seeds=${SEEDS:-"1 2 3"}
load() { cut -d' ' -f1 /proc/loadavg; }
field() { grep -o "\"$2\":[^,}]*" <<<"$1" | head -1 | cut -d: -f2; }

for name in "$@"; do
  for seed in $seeds; do
    dir=runs/recurrent/$name-seed$seed
    rm -rf "$dir"
    before=$(load)
    json=$("$coral" --config "configs/$name.toml" train --seed "$seed" --run-dir "$dir" --progress-seconds 30 |
           tail -1)
    after=$(load)
    printf '%s seed %s: solved %s, return %s, env steps %s, wall %.0f s, load %s -> %s\n' "$name" "$seed" \
      "$(field "$json" solved)" "$(field "$json" mean_return)" "$(field "$json" env_steps)" \
      "$(field "$json" wall_seconds)" "$before" "$after"
  done
done
