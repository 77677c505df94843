#pragma once
/// \file
/// `step_budget`: the env steps that the batchers of a sampler's shards
/// draw from, a chunk at a time.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace coral::actors {

/// The env steps a sampler of several shards is to take, shared by their
/// batchers. With a fixed share each, a shard whose envs stepped faster (or
/// whose core the machine ran faster) finished first and left its threads
/// idle while the other finished its share: MuJoCo humanoid's two shards
/// ended 8–26% of the run apart (BENCHMARKS.md, "Heavy envs against the
/// machine's ceiling"). Drawing from one budget, every shard steps until the
/// total is done. A claim takes what is left ÷ (2 × claimers) (at least
/// `min`), so the shards touch the shared line a few dozen times a
/// run, not once a batch, and the last claims are small: the shards end
/// within about one batch of each other.
///
/// Thread safety: claim() and left() from any thread.
class step_budget {
 public:
  /// `total` steps for `claimers` batchers (0 counts as 1).
  step_budget(std::uint64_t total, std::size_t claimers) noexcept
      : left_(total), claimers_(std::max<std::size_t>(claimers, 1)) {}

  /// Takes max(min, left / (2 × claimers), 1) steps, or what is left if
  /// fewer; 0 when none are.
  [[nodiscard]] std::uint64_t claim(std::uint64_t min) noexcept {
    std::uint64_t left = left_.load(std::memory_order_relaxed);
    for (;;) {
      if (left == 0) return 0;
      const std::uint64_t want =
          std::min(left, std::max({min, left / (2 * static_cast<std::uint64_t>(claimers_)), std::uint64_t{1}}));
      if (left_.compare_exchange_weak(left, left - want, std::memory_order_relaxed)) return want;
    }
  }

  /// Steps not yet claimed.
  [[nodiscard]] std::uint64_t left() const noexcept { return left_.load(std::memory_order_relaxed); }

 private:
  alignas(64) std::atomic<std::uint64_t> left_;
  std::size_t claimers_;
};

}  // namespace coral::actors
