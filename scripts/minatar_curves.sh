#!/usr/bin/env bash
# Trains MinAtar's five games with configs/minatar-<game>-<algo>.toml, one
# run after the other (under nice: the runs use both cores), and draws their
# learning curves, the mean return of the last 100 episodes against env
# steps, one panel per game, into one PNG (gnuplot, as
# plot_learning_curves.sh draws).
#
#   scripts/minatar_curves.sh ALGO [--seed S] [--total-steps N] [--runs DIR] [--out PNG] [--plot-only]
#
#   ALGO            ppo or dqn (the configs' suffix)
#   --seed S        the runs' seed (default 1)
#   --total-steps N env steps per game instead of the config's
#   --runs DIR      where the run dirs go: DIR/minatar-<game>-<algo>-seed<S> (default runs)
#   --out PNG       the figure (default docs/minatar-<algo>.png)
#   --plot-only     draw from the run dirs already there, train nothing
#
# e.g. scripts/minatar_curves.sh ppo && scripts/minatar_curves.sh dqn --total-steps 2000000
# The coral binary: $CORAL, else build/release/apps/coral.
set -euo pipefail
usage() {
  echo "usage: $0 ppo|dqn [--seed S] [--total-steps N] [--runs DIR] [--out PNG] [--plot-only]" >&2
  exit 1
}
[[ $# -ge 1 ]] || usage
algo=$1
shift
[[ $algo == ppo || $algo == dqn ]] || usage
seed=1
steps=""
runs=runs
out=docs/minatar-$algo.png
train=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --seed) seed=${2:?}; shift 2 ;;
    --total-steps) steps=${2:?}; shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --plot-only) train=0; shift ;;
    *) usage ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
coral=${CORAL:-$root/build/release/apps/coral}
games=(asterix breakout freeway seaquest space_invaders)
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found" >&2; exit 1; }

if [[ $train == 1 ]]; then
  [[ -x $coral ]] || { echo "$0: no coral binary at $coral (set CORAL)" >&2; exit 1; }
  for game in "${games[@]}"; do
    dir=$runs/minatar-$game-$algo-seed$seed
    extra=()
    [[ -n $steps ]] && extra=(--total-steps "$steps")
    echo "== $game: $dir"
    nice "$coral" train --config "$root/configs/minatar-$game-$algo.toml" --seed "$seed" --run-dir "$dir" \
      --progress-seconds 30 "${extra[@]}" | tail -1
  done
fi

# One panel per game; each line from the run's metrics.csv, its columns by name.
panels=""
for game in "${games[@]}"; do
  csv=$runs/minatar-$game-$algo-seed$seed/metrics.csv
  [[ -r $csv ]] || { echo "$0: cannot read $csv" >&2; exit 1; }
  cols=$(head -1 "$csv" | tr ',' '\n' | grep -n -x -e env_steps -e mean_return | cut -d: -f1 | tr '\n' ' ')
  read -r c_steps c_return <<<"$cols"
  panels+="set title '$game'
plot '$csv' using (\$$c_steps/1e6):$c_return with lines notitle
"
done
mkdir -p "$(dirname "$out")"
gnuplot <<EOF
set datafile separator ','
set terminal pngcairo size 1200,650 noenhanced
set output '$out'
set multiplot layout 2,3 title 'MinAtar, $algo (configs/minatar-<game>-$algo.toml, seed $seed): mean return of the last 100 episodes'
set grid
set xlabel 'env steps (millions)'
set format x '%g'
set ylabel 'return'
$panels
unset multiplot
EOF
echo "$out"
