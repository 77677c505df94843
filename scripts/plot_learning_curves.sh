#!/usr/bin/env bash
# Draws one task's learning curves from the metrics.csv of several runs (seeds):
# mean return of the last 100 episodes against env steps (left) and against
# wall time (right), one line per run.
#
#   scripts/plot_learning_curves.sh OUT.png TITLE RUN_DIR...
#
# e.g. scripts/plot_learning_curves.sh docs/ppo_halfcheetah.png "PPO halfcheetah" runs/halfcheetah-seed{1,2,3}
# Each RUN_DIR is a `coral train --run-dir`; its name labels its line.
set -euo pipefail
if [[ $# -lt 3 ]]; then
  echo "usage: $0 OUT.png TITLE RUN_DIR..." >&2
  exit 1
fi
out=$1
title=$2
shift 2
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found" >&2; exit 1; }

by_steps=()
by_time=()
for dir in "$@"; do
  csv="$dir/metrics.csv"
  [[ -r $csv ]] || { echo "$0: cannot read $csv" >&2; exit 1; }
  label=$(basename "$dir")
  # Columns by name, so that the plot does not depend on their order.
  cols=$(head -1 "$csv" | tr ',' '\n' | grep -n -x -e seconds -e env_steps -e mean_return | cut -d: -f1 | tr '\n' ' ')
  read -r c_seconds c_steps c_return <<<"$cols"
  by_steps+=("'$csv' using (\$$c_steps/1e6):$c_return with lines title '$label'")
  by_time+=("'$csv' using $c_seconds:$c_return with lines title '$label'")
done

join() { local IFS=,; echo "$*"; }
gnuplot <<EOF
set datafile separator ','
set key autotitle columnhead
set terminal pngcairo size 1200,450 noenhanced
set output '$out'
set multiplot layout 1,2 title '$title: mean return of the last 100 episodes'
set grid
set key bottom right
set xlabel 'env steps (millions)'
set ylabel 'return'
plot $(join "${by_steps[@]}")
set xlabel 'wall time (s)'
plot $(join "${by_time[@]}")
unset multiplot
EOF
echo "$out"
