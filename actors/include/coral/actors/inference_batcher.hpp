#pragma once
/// \file
/// The inference batcher actor: one loop for every topology.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include <asio/awaitable.hpp>

#include "coral/actors/env_group.hpp"
#include "coral/actors/policy.hpp"
#include "coral/actors/step_budget.hpp"
#include "coral/actors/step_consumer.hpp"
#include "coral/channels/channel.hpp"
#include "coral/channels/latest.hpp"

namespace coral::actors {

/// Counters a batcher keeps; readable from any thread while it runs.
struct batcher_stats {
  std::atomic<std::uint64_t> env_steps{0};  ///< env steps acted on (envs in batches)
  std::atomic<std::uint64_t> batches{0};
  std::atomic<std::int64_t> idle_ns{0};     ///< time spent waiting for ready groups
  std::atomic<std::int64_t> run_ns{0};      ///< time from the first batch to the end
  std::atomic<std::uint64_t> policy_version{0};
  /// Fraction of the run the batcher spent waiting for envs.
  [[nodiscard]] double idle_fraction() const noexcept {
    const auto run = run_ns.load();
    return run > 0 ? static_cast<double>(idle_ns.load()) / static_cast<double>(run) : 0.0;
  }
};

/// The batcher's loop, the same for every topology:
///
///   take the next ready channel in turn;
///   receive ready groups from it until batch_size envs are in hand (or, with
///     dynamic batching, at least min_batch_size once batch_timeout passed);
///   pick up newer weights, if a learner published some;
///   run the policy on those rows; hand the step to the consumer;
///   send each group in the batch its actions token.
///
/// It stops after max_env_steps env steps (0 = never), when its step budget
/// is spent, or when a ready channel closes, and then closes every channel it knows, so the groups end too.
///
/// Thread safety: run() is one coroutine; stats() may be read from any thread.
class alignas(64) inference_batcher {
 public:
  struct options {
    std::size_t batch_size = 1;
    std::size_t min_batch_size = 0;
    std::chrono::microseconds batch_timeout{0};
    std::uint64_t max_env_steps = 0;
    /// Shared with other batchers (a sampler's shards): drawn from a chunk
    /// at a time, and the loop stops when it is spent (with max_env_steps
    /// too, whichever comes first). Must outlive run().
    step_budget* budget = nullptr;
  };

  /// `groups[i]` must have id `first + i`, where `first` is groups[0]'s id
  /// (a shard's groups: see sampler_options::shards), and send to
  /// `ready[i % ready.size()]`; every group has the same size.
  inference_batcher(std::vector<channel<ready_msg>*> ready, std::vector<env_group*> groups, policy& pol,
                    envs::env_batch& batch, options opts, step_consumer* consumer = nullptr,
                    const latest<std::vector<float>>* weights = nullptr);

  /// The actor's body.
  [[nodiscard]] asio::awaitable<void> run();

  /// Closes every channel: the groups and this loop end after their current step.
  void close_all() noexcept;
  /// Whether run() ever waits with a deadline (dynamic batching: a minimum
  /// below the batch size). Otherwise it awaits channel operations only,
  /// and ends once close_all() ran: runtime's actor_waits::channels_only.
  [[nodiscard]] bool waits_with_deadline() const noexcept;

  [[nodiscard]] const batcher_stats& stats() const noexcept { return stats_; }

 private:
  /// Receives ready groups from `ch` into groups_in_hand_ until the batch is
  /// full (or the dynamic-batching deadline passed). False once `ch` closed.
  asio::awaitable<bool> collect(channel<ready_msg>& ch);
  /// Groups a batch may start with once the deadline passed (all of them
  /// without dynamic batching).
  [[nodiscard]] std::size_t groups_min() const noexcept;

  std::vector<channel<ready_msg>*> ready_;
  std::vector<env_group*> groups_;
  policy* policy_;
  envs::env_batch* batch_;
  options options_;
  step_consumer* consumer_;
  const latest<std::vector<float>>* weights_;
  std::size_t group_size_;
  std::uint32_t first_group_;          // id of groups_[0]
  std::vector<ready_msg> received_;    // scratch for receive_some
  std::vector<std::uint32_t> in_hand_;  // groups_ indices (id - first_group_) of the batch being formed
  std::vector<row_range> ranges_;
  std::vector<float> log_probs_;
  std::vector<float> values_;
  batcher_stats stats_;
};

}  // namespace coral::actors
