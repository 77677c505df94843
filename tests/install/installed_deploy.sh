#!/usr/bin/env bash
# Trains a short cartpole run with the built `coral` into a checkpoint
# directory, then builds examples/deploy against a fresh install
# (build_outside.sh) and plays an episode with that checkpoint.
# Usage: installed_deploy.sh BUILD_DIR PROJECT_DIR
set -euo pipefail
build=$1 project=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/apps/coral" train --env cartpole --no-run-dir --total-steps 2048 --seed 2 --progress-seconds 0 \
  --checkpoint-dir "$work/ckpt" > "$work/train.log" || { cat "$work/train.log"; exit 1; }
"$(dirname "$0")/build_outside.sh" "$build" "$project" "deploy: cartpole, one episode of" "$work/ckpt"
