#!/usr/bin/env bash
# Runs every benchmark whose figures BENCHMARKS.md records, from a release
# build. Each figure is a ratio against a baseline in the same process (or
# the same invocation), so compare ratios, not absolute rates, across runs.
# Usage: bench/run_benchmarks.sh [BUILD_DIR]   (default build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
coral="$build/apps/coral"

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== channels (1-thread and 2-thread hop and throughput vs Asio concurrent_channel and mutex+cv)"
"$build/bench/channel_bench" --benchmark_min_time=0.3 --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true 2>&1 | grep -E "median|^---|Benchmark"

bench() { "$coral" bench "$@" | grep -E "^(sampler|baseline|speedup)"; }

echo "== delay 10 us (std 0), 64 envs in groups of 8, 2 threads: ideal 2 / 10 us = 200,000 steps/s"
for t in pool double-buffer sync; do
  echo "-- $t"; bench --env delay --env-arg mean_us=10 --env-arg std_us=0 --topology "$t" \
    --num-envs 64 --envs-per-group 8 --threads 2 --steps 400000 --no-baseline
done

echo "== delay 100 us, std 100 us, 2 threads: pool vs sync"
d="--env delay --env-arg mean_us=100 --env-arg std_us=100 --threads 2 --steps 30000 --no-baseline"
echo "-- sync, 2 envs (one per thread)";      bench $d --topology sync --num-envs 2
echo "-- sync, 4 envs";                        bench $d --topology sync --num-envs 4
echo "-- pool, 4 envs, batch 2";               bench $d --topology pool --num-envs 4 --batch-size 2
echo "-- sync, 16 envs in groups of 4";        bench $d --topology sync --num-envs 16 --envs-per-group 4
echo "-- pool, 16 envs in groups of 4, batch 8"; bench $d --topology pool --num-envs 16 --envs-per-group 4 --batch-size 8

echo "== noop, pool, 2 threads"
echo "-- 8 envs, batch 4, groups of 4"
bench --env noop --topology pool --num-envs 8 --batch-size 4 --envs-per-group 4 --threads 2 --steps 4000000
echo "-- 8 envs, batch 4, groups of 1"
bench --env noop --topology pool --num-envs 8 --batch-size 4 --envs-per-group 1 --threads 2 --steps 2000000
echo "-- 1024 envs, batch 512, groups of 256"
bench --env noop --topology pool --num-envs 1024 --batch-size 512 --envs-per-group 256 --threads 2 --steps 40000000
