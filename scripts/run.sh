#!/usr/bin/env bash
# Installs what is missing, builds what the main job needs (the `coral`
# command and the Python module, not the tests or benchmarks), and runs
# `coral train` with the flags given (none: PPO on cartpole at the defaults).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh main
cmake --preset release > /dev/null
cmake --build --preset release -j"$(nproc)" --target coral coral_python
# `import coral` for Debian's python3: the package goes under /usr/local.
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
"${sudo_cmd[@]}" cmake --install build/release --component python > /dev/null
exec build/release/apps/coral train "$@"
