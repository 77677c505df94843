#!/usr/bin/env bash
# Installs the coral build tree BUILD into a fresh prefix, then configures,
# builds and runs an outside project against it, exactly as a user would.
# Usage: build_outside.sh BUILD_DIR PROJECT_DIR EXPECTED_OUTPUT [ARGS...]
set -euo pipefail
build=$1 project=$2 expected=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
cmake -S "$project" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" -j2 > "$work/build.log" || { cat "$work/build.log"; exit 1; }
exe=$(find "$work/build" -maxdepth 1 -type f -executable | head -n 1)
out=$("$exe" "$@")
echo "$out"
grep -qF -- "$expected" <<<"$out" || { echo "expected output containing: $expected"; exit 1; }
