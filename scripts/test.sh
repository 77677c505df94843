#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the quick and the
# long (stress, learning) tests in a release build, the concurrency tests
# under ThreadSanitizer, and the rest under AddressSanitizer + UBSan.
# This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

scripts/deps.sh

step() { printf '\n==> %s\n' "$*"; }

step "release build"
cmake --preset release > /dev/null
cmake --build --preset release -j"$jobs"
step "release tests (all labels)"
ctest --preset release-all

step "ThreadSanitizer build of the runtime layers"
cmake --preset tsan > /dev/null
cmake --build --preset tsan -j"$jobs"
step "concurrency tests under ThreadSanitizer"
ctest --preset tsan

step "AddressSanitizer + UBSan build of the runtime layers"
cmake --preset asan > /dev/null
cmake --build --preset asan -j"$jobs"
step "other tests under AddressSanitizer + UBSan"
if ctest --preset asan -N | grep -q "Total Tests: 0"; then
  echo "(no non-concurrency tests to run under ASan yet)"
else
  ctest --preset asan
fi
