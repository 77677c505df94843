#pragma once
/// \file
/// `epsilon_schedule`: the exploration rates of an epsilon-greedy policy, one
/// per row, on Ape-X's ladder after a linear decay from 1.
///
/// Row r of `rows` explores with
///
///     epsilon_r(t) = e_r + (1 − e_r) · max(0, 1 − t / decay_steps),
///     e_r = ape_x_epsilon(r, rows, base, alpha),
///
/// t the env steps acted on so far (decay_steps 0: e_r from the start). The
/// acting side (a policy, on its batcher's executor) advances t after each
/// batch; a progress line or a learner on other threads reads the rates
/// while it does.
///
/// Thread safety: advance() from one thread at a time (the policy's
/// batcher). epsilon(), steps() and rows() from any thread at any time: the
/// rungs never change after construction, and t is an atomic counter
/// (relaxed: it publishes nothing else), so a reader sees a count the
/// schedule went through, never a torn one.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace coral::actors {

/// Env i's epsilon on Ape-X's ladder of `n` envs: base^(1 + alpha i / (n − 1)) (base for n = 1).
[[nodiscard]] double ape_x_epsilon(std::size_t i, std::size_t n, double base, double alpha) noexcept;

/// Per-row epsilons that decay with the env steps acted on (see the file comment).
class epsilon_schedule {
 public:
  /// `rows` rungs of the ladder (base, alpha), reached after `decay_steps`
  /// env steps; `steps_done` steps were acted on already (a resumed run).
  epsilon_schedule(std::size_t rows, double base, double alpha, std::uint64_t decay_steps,
                   std::uint64_t steps_done = 0);
  epsilon_schedule(const epsilon_schedule&) = delete;
  epsilon_schedule& operator=(const epsilon_schedule&) = delete;

  /// Row `row`'s epsilon now (any thread).
  [[nodiscard]] double epsilon(std::size_t row) const noexcept { return epsilon(row, steps()); }
  /// Row `row`'s epsilon after `steps` env steps (a pure function of its arguments).
  [[nodiscard]] double epsilon(std::size_t row, std::uint64_t steps) const noexcept;
  /// Row `row`'s rung: its epsilon once the decay is over.
  [[nodiscard]] double rung(std::size_t row) const noexcept { return rungs_[row]; }
  /// Env steps acted on so far (any thread).
  [[nodiscard]] std::uint64_t steps() const noexcept { return steps_.load(std::memory_order_relaxed); }
  /// Rows in the ladder.
  [[nodiscard]] std::size_t rows() const noexcept { return rungs_.size(); }

  /// Counts `acted` more env steps (the acting side, after a batch).
  void advance(std::uint64_t acted) noexcept { steps_.fetch_add(acted, std::memory_order_relaxed); }

 private:
  std::vector<double> rungs_;
  std::uint64_t decay_steps_;
  std::atomic<std::uint64_t> steps_;
};

}  // namespace coral::actors
