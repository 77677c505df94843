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

# Each step is printed with the minutes since the script started.
step() { printf '\n==> [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
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
# The sanitizer builds run beside the release tests, at the lowest priority:
# those tests (learning runs, runs of the binary that wait out deadlines,
# mpirun) leave a core idle much of the time on 2 cores, and a compile at
# nice 19 takes little more than that (a woken test preempts it). Each
# build's output goes to build/<preset>-build.log, printed once it ends.
step "ThreadSanitizer build of the runtime layers, then the AddressSanitizer + UBSan build (clang 14) of them, the torch-free command and the fuzz targets: in the background at nice 19"
cmake --preset tsan "${cache[@]}" > /dev/null
cmake --preset asan "${cache[@]}" > /dev/null
started=$SECONDS
setsid nice -n 19 bash -c "cmake --build --preset tsan -j$jobs > build/tsan-build.log 2>&1 &&
                           echo \"tsan tree built \$((SECONDS + $started)) s into the run\" >> build/tsan-build.log &&
                           cmake --build --preset asan -j$jobs > build/asan-build.log 2>&1 &&
                           echo \"asan tree built \$((SECONDS + $started)) s into the run\" >> build/asan-build.log" &
sanitizer_builds=$!
# If the release tests fail, the script ends there: stop the builds too.
trap 'kill -- -"$sanitizer_builds" 2> /dev/null || true' EXIT

step "release tests (all labels)"
ctest --preset release-all

step "waiting for the sanitizer builds"
builds_ok=true
wait "$sanitizer_builds" || builds_ok=false
trap - EXIT
for log in build/tsan-build.log build/asan-build.log; do
  if [ -f "$log" ]; then printf '\n--- %s\n' "$log"; cat "$log"; fi
done
if [ "$builds_ok" != true ]; then
  echo "a sanitizer build failed: see its log above" >&2
  exit 1
fi

step "concurrency tests under ThreadSanitizer"
ctest --preset tsan
step "quick tests under AddressSanitizer + UBSan"
ctest --preset asan
step "each parser of outside input fuzzed for a bounded time (libFuzzer, asan build), and every input that once crashed"
ctest --preset fuzz
# Executions per target, for RELIABILITY.md's count.
grep -E '^[0-9]+/[0-9]+ Test: fuzz_|stat::number_of_executed_units' build/asan/Testing/Temporary/LastTest.log || true
