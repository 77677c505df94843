#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the quick and the
# long (stress, learning) tests in a release build, the concurrency tests
# (stress included) under ThreadSanitizer, and the quick tests under
# AddressSanitizer + UBSan, then fuzzes every parser of outside input for a
# bounded time (libFuzzer; the fuzz targets are built in the asan tree, with
# clang 14). The sanitizer builds leave out libtorch. This is what CI runs
# (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

scripts/deps.sh

step() { printf '\n==> %s\n' "$*"; }
# ccache, where the machine has it, makes a rebuild of an unchanged tree cheap;
# without it the build is the same, only slower.
cache=()
if command -v ccache > /dev/null; then cache=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi

step "release build"
cmake --preset release "${cache[@]}" > /dev/null
cmake --build --preset release -j"$jobs"
# `import coral` for Debian's python3, as scripts/run.sh does.
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
"${sudo_cmd[@]}" cmake --install build/release --component python > /dev/null
step "release tests (all labels)"
ctest --preset release-all

step "ThreadSanitizer build of the runtime layers"
cmake --preset tsan "${cache[@]}" > /dev/null
cmake --build --preset tsan -j"$jobs"
step "concurrency tests under ThreadSanitizer"
ctest --preset tsan

step "AddressSanitizer + UBSan build (clang 14) of the runtime layers, the torch-free command and the fuzz targets"
cmake --preset asan "${cache[@]}" > /dev/null
cmake --build --preset asan -j"$jobs"
step "quick tests under AddressSanitizer + UBSan"
ctest --preset asan
step "each parser of outside input fuzzed for a bounded time (libFuzzer, same build), and every input that once crashed"
ctest --preset fuzz
# Executions per target, for RELIABILITY.md's count.
grep -E '^[0-9]+/[0-9]+ Test: fuzz_|stat::number_of_executed_units' build/asan/Testing/Temporary/LastTest.log || true
