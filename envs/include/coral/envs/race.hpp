#pragma once
/// \file
/// `race`: a multi-agent env with a variable number of agents. Catches rows
/// shuffled between agents, ignored active masks and per-agent episode
/// bookkeeping bugs.
///
/// The env owns `agents` rows (max_agents()). At reset, k agents take part,
/// k uniform in [min_agents, agents], in k slots drawn at random; the other
/// rows are inactive for the whole episode. Every agent starts at position 0
/// of a track of `length` cells. Actions Discrete(2): the agent in slot i
/// advances one cell when its action is i mod 2 (even slots advance with 0,
/// odd slots with 1) and stays put otherwise. Reaching cell `length` earns
/// reward 1 and ends that agent's episode, terminated; its row turns inactive.
/// After `max_steps` steps every agent still running is truncated. The env's
/// episode ends when no agent is running.
///
/// Observation Box((2,), -1, 1) per row: (position / length, +1 for an even
/// slot or −1 for an odd one); zeros in the rows of slots that sit the
/// episode out (a finished agent's row keeps its last observation, which
/// is meaningless once inactive). Because the advancing
/// action depends on the slot, a policy fed rows in the wrong order fails.
///
/// Optimal return per agent and episode: 1 whenever max_steps ≥ length
/// (reached after `length` steps). Solved at 0.95.

#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/core/rng.hpp"

namespace coral::envs {

/// Agents race along a track; each must learn its own advancing action.
class race final : public env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "race";
  /// One-line description.
  static constexpr std::string_view description =
      "multi-agent: a random subset of agent slots race to the end of a track (tests masks and row order)";
  /// Config keys: agents, min_agents, length, max_steps.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed. Rejects (config_error naming
  /// `min_agents`) min_agents > agents.
  race(const env_config& config, env_seed seed);

  void reset(const env_rows& rows) override;
  void step(const env_rows& rows) override;
  [[nodiscard]] const space& observation_space() const noexcept override { return observation_space_; }
  [[nodiscard]] const space& action_space() const noexcept override { return action_space_; }
  [[nodiscard]] std::size_t max_agents() const noexcept override { return positions_.size(); }
  [[nodiscard]] std::optional<double> optimal_return() const noexcept override { return 1.0; }
  [[nodiscard]] std::optional<double> solved_return() const noexcept override { return 0.95; }

  /// The action that advances the agent in `slot`.
  [[nodiscard]] static std::int32_t advancing_action(std::size_t slot) noexcept {
    return static_cast<std::int32_t>(slot % 2);
  }
  /// Position of the agent in `slot` (meaningless if the slot is not running).
  [[nodiscard]] std::int64_t position(std::size_t slot) const noexcept { return positions_[slot]; }

 private:
  void write_observation(const env_rows& rows, std::size_t slot) const noexcept;

  space observation_space_;
  space action_space_;
  rng rng_;
  std::int64_t min_agents_;
  std::int64_t length_;
  std::int64_t max_steps_;
  std::vector<std::int64_t> positions_;
  std::vector<std::uint8_t> running_;
  std::vector<std::uint32_t> slots_;  // scratch for drawing the participating slots
  std::int64_t steps_ = 0;
};

}  // namespace coral::envs
