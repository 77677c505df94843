#pragma once
/// \file
/// `bandit`: a multi-armed bandit, the first sanity check. Catches actions
/// that reach the wrong env or the wrong row, and rewards credited to the
/// wrong action.
///
/// - Observation Box((1,), 1, 1): always 1.
/// - Action Discrete(arms). One arm, fixed by `solution_seed` and the same for
///   every env, episode and run seed, pays reward 1; the others pay 0.
/// - Every episode is one step long and ends terminated.
///
/// Optimal return per episode: 1 (always pull the paying arm); a uniform
/// policy gets 1/arms. Solved at a mean return of 0.95.

#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/core/rng.hpp"

namespace coral::envs {

/// A one-step multi-armed bandit with one paying arm.
class bandit final : public env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "bandit";
  /// One-line description.
  static constexpr std::string_view description = "multi-armed bandit: one fixed arm pays 1 (one-step episodes)";
  /// Config keys: arms, solution_seed.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed.
  bandit(const env_config& config, env_seed seed);

  void reset(const env_rows& rows) override;
  void step(const env_rows& rows) override;
  [[nodiscard]] const space& observation_space() const noexcept override { return observation_space_; }
  [[nodiscard]] const space& action_space() const noexcept override { return action_space_; }
  [[nodiscard]] std::optional<double> optimal_return() const noexcept override { return 1.0; }
  [[nodiscard]] std::optional<double> solved_return() const noexcept override { return 0.95; }

  /// The arm that pays.
  [[nodiscard]] std::int32_t solution_arm() const noexcept { return solution_arm_; }

 private:
  space observation_space_;
  space action_space_;
  std::int32_t solution_arm_;
};

}  // namespace coral::envs
