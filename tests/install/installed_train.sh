#!/usr/bin/env bash
# Installs the coral build tree BUILD into a fresh prefix and trains with the
# installed `coral`, which links no libtorch and hands the run to
# libexec/coral/coral-torch: the run must end with its JSON line.
# Usage: installed_train.sh BUILD_DIR
set -euo pipefail
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -x "$work/prefix/libexec/coral/coral-torch" || { echo "no libexec/coral/coral-torch installed"; exit 1; }
if ldd "$work/prefix/bin/coral" | grep -q torch; then echo "the installed coral links libtorch"; exit 1; fi
cd "$work"
out=$("$work/prefix/bin/coral" train --no-run-dir --total-steps 2048 --seed 2)
echo "$out"
grep -qF -- '"algo":"ppo"' <<<"$(tail -n 1 <<<"$out")" || { echo "expected the run's JSON line"; exit 1; }
