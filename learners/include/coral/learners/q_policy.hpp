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
/// Env i (rows i·agents to i·agents + agents − 1) explores with the
/// actors::epsilon_schedule of (rows / agents, epsilon_base, epsilon_alpha,
/// exploration_steps): epsilon_i(t) = e_i + (1 − e_i) · max(0, 1 − t /
/// exploration_steps), e_i = ape_x_epsilon(i, envs, base, alpha), t the env
/// steps (rows) acted on (the policy counts them; a resumed run passes its
/// count). Random actions and the coin come from the row's own generator,
/// seeded from (seed, row) in a family apart from the envs', so the actions
/// of a row do not depend on which rows share its batch. values[r], when
/// asked for, is max_a Q(o, a).
///
/// Multi-agent rows: an inactive row (no agent in play, or one waiting for
/// its turn) is not acted for; its action and value are left alone. Where
/// the env masks actions and config.action_masks is on, the greedy action
/// and the value are the best legal one and exploration draws uniformly
/// among the legal actions.
///
/// Thread safety: act() and load_weights() from one batcher at a time, as
/// for every policy; epsilon() and schedule() from any thread (the progress
/// line reads them while the batcher acts).
class q_policy final : public actors::policy {
 public:
  /// Weights are zero until load_weights(); the learner publishes its own first.
  q_policy(const network_spec& spec, std::size_t rows, std::uint64_t seed, const dqn_config& config,
           std::uint64_t steps_done = 0, std::size_t agents = 1);
  ~q_policy() override;
  q_policy(const q_policy&) = delete;
  q_policy& operator=(const q_policy&) = delete;

  void act(const actors::policy_rows& rows) override;
  /// Throws usage_error if the size is not the Q network's.
  void load_weights(std::span<const float> weights) override;
  /// Row r's epsilon now: its env's (any thread).
  [[nodiscard]] double epsilon(std::size_t row) const noexcept;
  /// Greedy actions (epsilon 0, nothing drawn) instead of epsilon-greedy, for
  /// evaluation; the schedule still counts the steps.
  void set_deterministic(bool on) noexcept;
  /// The exploration schedule the policy advances, one rung per env
  /// (readable from any thread).
  [[nodiscard]] const actors::epsilon_schedule& schedule() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace coral::learners
