#pragma once
/// \file
/// The PPO policy-lag bound as a gate policy: env groups are held at segment
/// boundaries until the learner's weights are fresh enough.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "coral/actors/gate.hpp"
#include "coral/channels/latest.hpp"
#include "coral/core/error.hpp"
#include "coral/training/rollout.hpp"

namespace coral::training {

/// Lets a group take step n, of segment k = n / T, when k <= max_policy_lag
/// or the newest published weights are at least base + k − max_policy_lag
/// (base: the version published before sampling). With lag 0 every step of
/// segment k is acted on by exactly version base + k: strictly on-policy,
/// and the sampler waits while the learner updates. The learner sends the
/// gate actors::weights_published after each update.
///
/// Each arrival goes to the rollout assembler first (it records the outcome
/// of the group's previous step). Segments waiting for the learner are then
/// at most max_policy_lag + 1, plus the one it trains on: the assembler's
/// segments_in_flight() must be max_policy_lag + 2.
///
/// Thread safety: the gate's calls come from its own actor; the weights are
/// read through latest<>'s atomic version.
class policy_lag_gate final : public actors::gate_policy {
 public:
  policy_lag_gate(rollout_assembler& assembler, const latest<std::vector<float>>& weights, std::size_t max_policy_lag)
      : assembler_(&assembler), weights_(&weights), lag_(max_policy_lag), base_(weights.version()) {
    if (base_ == 0) throw usage_error("policy_lag_gate: publish the initial weights first");
    if (assembler.segments().capacity() < segments_in_flight(max_policy_lag)) {
      throw usage_error("policy_lag_gate: the assembler holds fewer segments than the lag bound lets through");
    }
  }

  /// The segments the assembler must have room for (saturating: a lag near
  /// 2^64 cannot be held; cap it at the run's segments first).
  [[nodiscard]] static std::size_t segments_in_flight(std::size_t max_policy_lag) {
    return max_policy_lag > std::numeric_limits<std::size_t>::max() - 2 ? std::numeric_limits<std::size_t>::max()
                                                                        : max_policy_lag + 2;
  }

  void arrived(std::uint32_t group, std::uint64_t step) override { assembler_->arrived(group, step); }
  bool may_step(std::uint32_t, std::uint64_t step, std::size_t) override {
    const std::uint64_t k = step / assembler_->horizon();
    return k <= lag_ || weights_->version() >= base_ + k - lag_;
  }

 private:
  rollout_assembler* assembler_;
  const latest<std::vector<float>>* weights_;
  std::size_t lag_;
  std::uint64_t base_;
};

}  // namespace coral::training
