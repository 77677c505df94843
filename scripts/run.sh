#!/usr/bin/env bash
# Installs what is missing, builds, and runs coral's main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release > /dev/null
cmake --build --preset release -j"$(nproc)"
# `import coral` for Debian's python3: the package goes under /usr/local.
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
"${sudo_cmd[@]}" cmake --install build/release --component python > /dev/null
exec build/release/apps/coral train "$@"
