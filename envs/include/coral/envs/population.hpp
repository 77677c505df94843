#pragma once
/// \file
/// `population`: a multi-agent env whose agents join and leave at random
/// mid-episode, so rows go inactive and active again while the env's
/// episode goes on. Each agent has the same small task.
///
/// `agents` slots. At reset each slot holds an agent with probability 1/2
/// (slot 0 always). After each step, each free slot takes a new agent with
/// probability `join`, and each agent that played leaves with probability
/// `leave` (truncated: it was cut short, its row turns inactive). An agent
/// that has played `length` steps is done (terminated, inactive). New
/// agents join only while at least `length` steps of the env's episode
/// (`max_steps`) are left, so the only early end of an agent's episode is a
/// random leave; if no agent is left in play while one could still join, the
/// lowest free slot takes one at once. The env's episode ends when no agent
/// is in play and none may join.
///
/// The task: each step the agent sees a cue, one of `actions` values
/// (observation: the one-hot cue, then the fraction of its `length` steps
/// played), and earns 1/`length` for answering the cue (action == cue).
/// The action mask rules out one of the wrong answers at random each step.
///
/// Optimum: answering every cue. An agent's return is then 1 if it stays its
/// `length` steps and k/length if it leaves after k; with leave probability
/// q the expected return per agent episode is (1 − (1 − q)^length) / (q ·
/// length) (1 when q = 0): optimal_return(). A policy that respects the
/// mask but guesses scores 1/(actions − 1) of that; one that ignores it,
/// 1/actions.

#include <string_view>
#include <vector>

#include "coral/core/rng.hpp"
#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"

namespace coral::envs {

/// Agents join and leave at random; see the file comment.
class population final : public env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "population";
  /// One-line description.
  static constexpr std::string_view description =
      "multi-agent: agents join and leave mid-episode at random, each answers a masked cue "
      "(optimum: every cue answered)";
  /// Config keys: agents, actions, length, join, leave, max_steps.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Rejects (config_error naming `max_steps`) max_steps < length.
  population(const env_config& config, env_seed seed);

  void reset(const env_rows& rows) override;
  void step(const env_rows& rows) override;
  [[nodiscard]] const space& observation_space() const noexcept override { return observation_space_; }
  [[nodiscard]] const space& action_space() const noexcept override { return action_space_; }
  [[nodiscard]] std::size_t max_agents() const noexcept override { return played_.size(); }
  [[nodiscard]] std::size_t action_mask_size() const noexcept override { return static_cast<std::size_t>(actions_); }
  [[nodiscard]] std::optional<double> optimal_return() const noexcept override;
  [[nodiscard]] std::optional<double> solved_return() const noexcept override { return 0.95 * *optimal_return(); }

  /// The cue slot `slot` must answer next (meaningless if it is not in play).
  [[nodiscard]] std::int32_t cue(std::size_t slot) const noexcept { return cues_[slot]; }

 private:
  void join(const env_rows& rows, std::size_t slot);
  void new_cue(const env_rows& rows, std::size_t slot);

  space observation_space_;
  space action_space_;
  rng rng_;
  std::int32_t actions_;
  std::int64_t length_;
  double join_;
  double leave_;
  std::int64_t max_steps_;
  std::int64_t steps_ = 0;
  std::vector<std::int64_t> played_;   // steps played by the agent in each slot; -1: free
  std::vector<std::int32_t> cues_;
};

}  // namespace coral::envs
