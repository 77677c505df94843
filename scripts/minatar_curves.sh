#!/usr/bin/env bash
# Trains MinAtar's five games with configs/minatar-<game>-<algo>.toml, one
# run after the other (under nice: the runs use both cores), and draws their
# learning curves, the mean return of the last 100 episodes against env
# steps, one panel per game, into one PNG (gnuplot, as
# plot_learning_curves.sh draws). Each panel has a dashed line at MinAtar's
# DQN return at 5M frames (Young & Tian 2019, read off its README's curves;
# docs/envs.md, "MinAtar").
#
#   scripts/minatar_curves.sh ALGO [--seeds "S ..."] [--total-steps N] [--to-paper] [--runs DIR] [--out PNG] [--plot-only]
#
#   ALGO            ppo or dqn (the configs' suffix)
#   --seeds "S ..." the runs' seeds, one line each (default 1)
#   --total-steps N env steps per game instead of the config's
#   --to-paper      stop each run when its mean return reaches MinAtar's DQN
#                   return at 5M frames (--target-return, --keep-going=false)
#   --runs DIR      where the run dirs go: DIR/minatar-<game>-<algo>-seed<S> (default runs)
#   --out PNG       the figure (default docs/minatar-<algo>.png)
#   --plot-only     draw from the run dirs already there, train nothing (a
#                   seed without a run dir for a game is left out of its panel)
#
# e.g. scripts/minatar_curves.sh ppo && scripts/minatar_curves.sh dqn --seeds "1 2 3" --to-paper
# The coral binary: $CORAL, else build/release/apps/coral.
set -euo pipefail
usage() {
  echo "usage: $0 ppo|dqn [--seeds \"S ...\"] [--total-steps N] [--to-paper] [--runs DIR] [--out PNG] [--plot-only]" >&2
  exit 1
}
[[ $# -ge 1 ]] || usage
algo=$1
shift
[[ $algo == ppo || $algo == dqn ]] || usage
seeds=1
steps=""
to_paper=0
runs=runs
out=docs/minatar-$algo.png
train=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --seeds) seeds=${2:?}; shift 2 ;;
    --to-paper) to_paper=1; shift ;;
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
declare -A paper=([asterix]=17 [breakout]=10 [freeway]=50 [seaquest]=20 [space_invaders]=43)
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found" >&2; exit 1; }

if [[ $train == 1 ]]; then
  [[ -x $coral ]] || { echo "$0: no coral binary at $coral (set CORAL)" >&2; exit 1; }
  for seed in $seeds; do
    for game in "${games[@]}"; do
      dir=$runs/minatar-$game-$algo-seed$seed
      extra=()
      [[ -n $steps ]] && extra+=(--total-steps "$steps")
      [[ $to_paper == 1 ]] && extra+=(--target-return "${paper[$game]}" --keep-going=false)
      echo "== $game, seed $seed: $dir"
      nice "$coral" train --config "$root/configs/minatar-$game-$algo.toml" --seed "$seed" --run-dir "$dir" \
        --progress-seconds 30 "${extra[@]}" | tail -1
    done
  done
fi

# One panel per game; each seed's line from its run's metrics.csv, columns by name.
panels=""
for game in "${games[@]}"; do
  plot="plot ${paper[$game]} with lines dashtype 2 lc rgb 'gray40' title 'MinAtar DQN, 5M'"
  found=0
  for seed in $seeds; do
    csv=$runs/minatar-$game-$algo-seed$seed/metrics.csv
    [[ -r $csv ]] || continue  # a game run on fewer seeds than another
    found=1
    cols=$(head -1 "$csv" | tr ',' '\n' | grep -n -x -e env_steps -e mean_return | cut -d: -f1 | tr '\n' ' ')
    read -r c_steps c_return <<<"$cols"
    plot+=", '$csv' using (\$$c_steps/1e6):$c_return with lines title 'seed $seed'"
  done
  [[ $found == 1 ]] || { echo "$0: no run of $game under $runs (minatar-$game-$algo-seed<S>/metrics.csv)" >&2; exit 1; }
  panels+="set title '$game'
$plot
"
done
mkdir -p "$(dirname "$out")"
gnuplot <<EOF
set datafile separator ','
set terminal pngcairo size 1200,650 noenhanced
set output '$out'
set multiplot layout 2,3 title 'MinAtar, $algo (configs/minatar-<game>-$algo.toml): mean return of the last 100 episodes'
set grid
set key right bottom
set xlabel 'env steps (millions)'
set format x '%g'
set ylabel 'return'
$panels
unset multiplot
EOF
echo "$out"
