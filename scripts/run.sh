#!/usr/bin/env bash
# Installs what is missing, builds, and runs coral's main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release > /dev/null
cmake --build --preset release -j"$(nproc)"
exec build/release/apps/coral train "$@"
