#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the quick and the
# long (stress, learning) tests in a release build, the concurrency tests
# (stress included) under ThreadSanitizer, and the quick tests under
# AddressSanitizer + UBSan, then fuzzes every parser of outside input for a
# bounded time (clang 14, libFuzzer). The sanitizer and fuzz builds leave out
# libtorch. This is what CI runs (.ci/run).
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

step "AddressSanitizer + UBSan build of the runtime layers"
cmake --preset asan "${cache[@]}" > /dev/null
cmake --build --preset asan -j"$jobs"
step "quick tests under AddressSanitizer + UBSan"
ctest --preset asan

step "fuzz build (clang 14, libFuzzer + ASan + UBSan) of the parsers of outside input"
cmake --preset fuzz "${cache[@]}" > /dev/null
cmake --build --preset fuzz -j"$jobs"
step "each parser fuzzed for a bounded time, and every input that once crashed"
ctest --preset fuzz
# Executions per target, for RELIABILITY.md's count.
grep -E '^[0-9]+/[0-9]+ Test: fuzz_|stat::number_of_executed_units' build/fuzz/Testing/Temporary/LastTest.log || true
