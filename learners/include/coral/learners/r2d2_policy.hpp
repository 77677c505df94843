#pragma once
/// \file
/// R2D2's acting policy: the recurrent Q-network as CPU kernels with
/// ε-greedy actions. Torch-free.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "coral/actors/epsilon_schedule.hpp"
#include "coral/actors/policy.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/network.hpp"

namespace coral::learners {

/// R2D2's acting side: the recurrent Q-network as CPU kernels, each batch
/// row with its own state (h, c), zeroed when the row's observation starts
/// an episode (terminated, truncated, or a reset after a failure), and
/// ε-greedy actions with each env's ε from the Ape-X ladder
/// (actors::epsilon_schedule over envs: the rows i·agents to i·agents +
/// agents − 1 of env i share its rung, as q_policy's). The network runs on
/// every act, exploring or not, so that the state follows every
/// observation. recurrent_states() holds the state each row's last act
/// started from (the sequence feeder stores it with a sequence). Writes max
/// Q into `values` when given; log probabilities are 0.
///
/// Multi-agent rows: each row is an agent slot with its own state. An
/// inactive row (no agent in play, or one waiting for its turn) is not
/// acted for: its action, value, state, recorded state and random stream
/// are left alone, except that a row whose agent ended (terminated or
/// truncated, even while it waited) has its state zeroed, so that the
/// slot's next agent starts from zeros. Where the env masks actions and
/// config.action_masks is on, the greedy action and the value are the best
/// legal one and exploration draws uniformly among the legal actions.
///
/// Allocation: none in act(). Thread safety: one batcher at a time.
class r2d2_policy final : public actors::policy {
 public:
  /// A policy for `rows` batch rows of `spec` (`agents` rows per env),
  /// which has acted `steps_done` env steps before (the exploration
  /// schedule continues from there).
  r2d2_policy(const network_spec& spec, std::size_t rows, std::uint64_t seed, const dqn_config& config,
              std::uint64_t steps_done, std::size_t agents = 1);
  ~r2d2_policy() override;
  r2d2_policy(const r2d2_policy&) = delete;
  r2d2_policy& operator=(const r2d2_policy&) = delete;

  void act(const actors::policy_rows& rows) override;
  /// Throws usage_error if the size is not r2d2_parameter_count(spec).
  void load_weights(std::span<const float> weights) override;

  /// The state (h then c, 2 × lstm floats) each row's last act() started
  /// from, row-major by batch row.
  [[nodiscard]] std::span<const float> recurrent_states() const noexcept;
  /// Greedy actions (epsilon 0, nothing drawn) instead of epsilon-greedy, for
  /// evaluation; the schedule still counts the steps.
  void set_deterministic(bool on) noexcept;
  /// The exploration schedule, one rung per env (read by the progress line).
  [[nodiscard]] const actors::epsilon_schedule& schedule() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace coral::learners
