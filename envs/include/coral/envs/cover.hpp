#pragma once
/// \file
/// `cover`: a cooperative team env with Dict observations whose optimum
/// needs the agents to split up.
///
/// `agents` agents (one team) and as many targets stand on distinct cells of
/// a line of `size` cells, all placed at random each episode. Actions
/// Discrete(3): 0 left, 1 stay, 2 right; moving off the line is masked out.
/// The episode lasts `size` − 1 steps, enough for any agent to reach any
/// cell. At the last step every agent gets reward 1 if every target has an
/// agent on it, else 0; there is no other reward.
///
/// Observation, a Dict in this order:
/// - `position`: Box((1,), 0, 1), the agent's cell / (size − 1);
/// - `slot`: Discrete(agents), the agent's slot;
/// - `targets`: Box((agents,), 0, 1), the targets' cells / (size − 1), in
///   increasing order;
/// - `others`: Box((agents − 1,), 0, 1), the other agents' cells / (size − 1),
///   in slot order;
/// - `steps_left`: Box((1,), 0, 1), steps left / (size − 1).
///
/// Optimum: 1 per agent and episode (slot k walks to the k-th target). A
/// policy that ignores the others and its slot makes every agent choose its
/// target the same way from the same targets: if each picks one at random,
/// all are covered with probability agents!/agents^agents (2/9 ≈ 0.22 for
/// 3 agents); if each walks to its nearest target, only when the agents
/// happen to start nearest to distinct targets (about 0.16 for 3 agents on
/// 8 cells; see tests/envs/multiagent_envs_test.cpp).

#include <string_view>
#include <vector>

#include "coral/core/rng.hpp"
#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"

namespace coral::envs {

/// Agents must spread over the targets; see the file comment.
class cover final : public env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "cover";
  /// One-line description.
  static constexpr std::string_view description =
      "cooperative team, Dict observations: agents must split up to cover every target (optimum 1)";
  /// Config keys: agents, size.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Rejects (config_error naming `size`) a line shorter than the agents.
  cover(const env_config& config, env_seed seed);

  void reset(const env_rows& rows) override;
  void step(const env_rows& rows) override;
  [[nodiscard]] const space& observation_space() const noexcept override { return observation_space_; }
  [[nodiscard]] const space& action_space() const noexcept override { return action_space_; }
  [[nodiscard]] std::size_t max_agents() const noexcept override { return positions_.size(); }
  [[nodiscard]] std::size_t action_mask_size() const noexcept override { return 3; }
  [[nodiscard]] std::optional<double> optimal_return() const noexcept override { return 1.0; }
  [[nodiscard]] std::optional<double> solved_return() const noexcept override { return 0.95; }

  /// Cell of the agent in `slot`.
  [[nodiscard]] std::int64_t position(std::size_t slot) const noexcept { return positions_[slot]; }
  /// Cells of the targets, in increasing order.
  [[nodiscard]] const std::vector<std::int64_t>& targets() const noexcept { return targets_; }
  /// Places agents and targets by hand (for tests); `targets` in increasing order.
  void place(const env_rows& rows, std::vector<std::int64_t> agents, std::vector<std::int64_t> targets);
  /// True if every target has an agent on it.
  [[nodiscard]] bool covered() const noexcept;

 private:
  void write_rows(const env_rows& rows) const;

  space observation_space_;
  space action_space_;
  rng rng_;
  std::int64_t size_;
  std::int64_t steps_left_ = 0;
  std::vector<std::int64_t> positions_;
  std::vector<std::int64_t> targets_;
  std::vector<std::int64_t> scratch_;
};

}  // namespace coral::envs
