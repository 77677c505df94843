#pragma once
/// \file
/// The acting side of DQN: epsilon-greedy on the Q network, dense kernels on the CPU, no torch call.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "coral/actors/epsilon_schedule.hpp"
#include "coral/actors/policy.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/network.hpp"

namespace coral::learners {

/// The acting side: epsilon-greedy on the Q network, run row by row on the
/// CPU with the dense kernels (no torch call, no allocation).
///
/// Row r (env r) explores with the actors::epsilon_schedule of (rows,
/// epsilon_base, epsilon_alpha, exploration_steps): epsilon_r(t) = e_r +
/// (1 − e_r) · max(0, 1 − t / exploration_steps), e_r =
/// ape_x_epsilon(r, rows, base, alpha), t the env steps acted on (the policy
/// counts them; a resumed run passes its count). Random actions and the coin
/// come from the row's own generator, seeded from (seed, row) in a family
/// apart from the envs', so the actions of a row do not depend on which rows
/// share its batch. values[r], when asked for, is max_a Q(o, a).
///
/// Thread safety: act() and load_weights() from one batcher at a time, as
/// for every policy; epsilon() and schedule() from any thread (the progress
/// line reads them while the batcher acts).
class q_policy final : public actors::policy {
 public:
  /// Weights are zero until load_weights(); the learner publishes its own first.
  q_policy(const network_spec& spec, std::size_t rows, std::uint64_t seed, const dqn_config& config,
           std::uint64_t steps_done = 0);
  ~q_policy() override;
  q_policy(const q_policy&) = delete;
  q_policy& operator=(const q_policy&) = delete;

  void act(const actors::policy_rows& rows) override;
  /// Throws usage_error if the size is not the Q network's.
  void load_weights(std::span<const float> weights) override;
  /// Row r's epsilon now (any thread).
  [[nodiscard]] double epsilon(std::size_t row) const noexcept;
  /// Greedy actions (epsilon 0, nothing drawn) instead of epsilon-greedy, for
  /// evaluation; the schedule still counts the steps.
  void set_deterministic(bool on) noexcept;
  /// The exploration schedule the policy advances (readable from any thread).
  [[nodiscard]] const actors::epsilon_schedule& schedule() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace coral::learners
