#pragma once
// What the learner benchmarks (fused_ppo_bench.cpp, ppo_threads_bench.cpp)
// share: their timing and their networks' shape.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "coral/learners/network.hpp"

namespace coral::bench {

/// Seconds per call of `f`: the median over 15 repetitions of the mean
/// over a batch of calls (at least 20 ms each), after 20 calls of warm-up.
template <class F>
double seconds_per_call(F&& f) {
  for (int i = 0; i < 20; ++i) f();
  std::vector<double> reps;
  for (int r = 0; r < 15; ++r) {
    const auto start = std::chrono::steady_clock::now();
    std::size_t n = 0;
    double elapsed = 0;
    do {
      f();
      ++n;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (elapsed < 0.02);
    reps.push_back(elapsed / static_cast<double>(n));
  }
  std::sort(reps.begin(), reps.end());
  return reps[reps.size() / 2];
}

/// The 64x64 MLP actor-critic over `in` observations with categorical
/// heads `nvec` and `continuous` Gaussians in [-1, 1].
inline learners::network_spec mlp_64x64(std::size_t in, const std::vector<std::int32_t>& nvec, std::size_t continuous) {
  learners::network_spec spec;
  spec.raw_obs_dim = in;
  spec.nvec = nvec;
  spec.low.assign(continuous, -1.0f);
  spec.high.assign(continuous, 1.0f);
  spec.hidden = {64, 64};
  return spec;
}

}  // namespace coral::bench
