#pragma once
/// \file
/// The counters and running means a training run reports: episodes seen by
/// the rollout assembler, losses of the learner's last update.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>

namespace coral::training {

/// What one update measured (PPO's fields, then DQN's).
struct update_stats {
  double policy_loss = 0;     ///< clipped surrogate, last epoch's mean
  double value_loss = 0;      ///< last epoch's mean
  double entropy = 0;         ///< mean policy entropy, last epoch
  double approx_kl = 0;       ///< mean of (ratio - 1) - log ratio over the last epoch
  double clip_fraction = 0;   ///< fraction of samples whose ratio was clipped, last epoch
  double learning_rate = 0;   ///< the annealed rate used
  double mean_policy_lag = 0; ///< learner version minus acting version, mean over the segment
  std::uint64_t max_policy_lag = 0;  ///< largest lag of a step in the segment
  double seconds = 0;         ///< wall time of the update
  double td_loss = 0;         ///< DQN: importance-weighted Huber loss
  double mean_q = 0;          ///< DQN: mean Q(o, a) of the batch
  double mean_abs_td = 0;     ///< DQN: mean |TD error| of the batch
};

/// A consistent copy of the statistics.
struct stats_snapshot {
  std::uint64_t env_steps = 0;   ///< env steps acted on (sampler side)
  std::uint64_t episodes = 0;    ///< episodes finished
  std::size_t window = 0;        ///< episodes in the running window (at most its size)
  double mean_return = 0;        ///< over the window (0 if empty)
  double mean_length = 0;
  std::uint64_t updates = 0;     ///< learner updates done
  double learner_seconds = 0;    ///< wall time spent in updates, total
  std::uint64_t max_policy_lag = 0;  ///< largest lag of any step trained on
  update_stats last_update;
};

/// Shared between the rollout assembler, the learner and the progress printer.
///
/// Thread safety: every member may be called from any thread (one mutex).
class training_stats {
 public:
  /// Means over the last `window` episodes.
  explicit training_stats(std::size_t window = 100) : window_(window) {}

  /// Records an episode; returns the mean return of the window if it is full.
  double add_episode(double episode_return, double episode_length, bool* window_full);
  /// Sets the env steps acted on so far.
  void set_env_steps(std::uint64_t steps);
  /// Records an update's statistics and the updates done so far.
  void record_update(const update_stats& s, std::uint64_t updates);
  /// A consistent copy of everything.
  [[nodiscard]] stats_snapshot read() const;

 private:
  mutable std::mutex mutex_;
  std::size_t window_;
  std::deque<double> returns_;
  std::deque<double> lengths_;
  double return_sum_ = 0;
  double length_sum_ = 0;
  stats_snapshot s_;
};

}  // namespace coral::training
