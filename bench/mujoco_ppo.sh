#!/usr/bin/env bash
# PPO on the MuJoCo tasks with the checked-in configs, one run at a time:
# for each task and seed, `coral train --config configs/<task>-ppo.toml --seed S`
# into runs/mujoco/<task>-seed<S>, with the 1-minute load average before and
# after each run. Prints one line per run (task, seed, return of the last 100
# episodes at the end, env steps, wall seconds, loads) and draws
# docs/ppo_<task>.png from the seeds' metrics (scripts/plot_learning_curves.sh).
#
#   bench/mujoco_ppo.sh [TASK...]      (default: halfcheetah hopper walker2d; SEEDS="1 2 3")
set -euo pipefail
cd "$(dirname "$0")/.."
coral=${CORAL:-build/release/apps/coral}
seeds=${SEEDS:-"1 2 3"}
tasks=("$@")
[[ ${#tasks[@]} -gt 0 ]] || tasks=(halfcheetah hopper walker2d)
load() { cut -d' ' -f1 /proc/loadavg; }
number() { grep -o "\"$2\":[-0-9.e+]*" <<<"$1" | head -1 | cut -d: -f2; }

for task in "${tasks[@]}"; do
  dirs=()
  for seed in $seeds; do
    dir=runs/mujoco/$task-seed$seed
    rm -rf "$dir"
    before=$(load)
    json=$("$coral" train --config "configs/$task-ppo.toml" --seed "$seed" --run-dir "$dir" --progress-seconds 30 |
           tail -1)
    after=$(load)
    printf '%s seed %s: return %.0f, env steps %s, wall %.0f s, load %s -> %s\n' "$task" "$seed" \
      "$(number "$json" mean_return)" "$(number "$json" env_steps)" "$(number "$json" wall_seconds)" "$before" "$after"
    dirs+=("$dir")
  done
  scripts/plot_learning_curves.sh "docs/ppo_$task.png" "PPO $task (configs/$task-ppo.toml)" "${dirs[@]}" >/dev/null
done
