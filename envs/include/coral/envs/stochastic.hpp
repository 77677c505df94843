#pragma once
/// \file
/// `stochastic`: the optimal policy is a fixed non-deterministic action
/// distribution. Catches a learner that collapses to a deterministic policy
/// (entropy or log-probability bugs) or samples actions wrongly.
///
/// The observation is always 1 (Box((1,), 1, 1)), actions are Discrete(2), and
/// an episode lasts `horizon` = H steps; the last ends terminated. With
/// x_i = 1 if action i was 0 and 0 otherwise, S = Σ (x_i − p) and
/// Q = Σ (x_i − p)², the last step pays
///
///     R = 1 − (S² − Q) / (H (H − 1) m²),   m = max(p, 1 − p),
///
/// and every other step pays 0. (S² − Q)/(H(H−1)) is the mean of
/// (x_i − p)(x_j − p) over pairs i ≠ j, so for a policy that picks action 0
/// with probability q independently at each step, E[R] = 1 − (q − p)²/m².
///
/// Optimal return per episode, over policies that see only the observation:
/// 1, reached exactly by picking action 0 with probability p. Always picking
/// action 1 earns 1 − p²/m² (0 for p ≥ 0.5); a uniform policy earns
/// 1 − (0.5 − p)²/m² (0.889 for the default p = 0.75). Solved at 0.97. (A
/// policy that counts its own actions can exceed 1; the observation gives it
/// nothing to count with, so a memoryless learner cannot.)

#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/core/rng.hpp"

namespace coral::envs {

/// Pick action 0 with probability p.
class stochastic final : public env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "stochastic";
  /// One-line description.
  static constexpr std::string_view description =
      "the optimal policy picks action 0 with probability p (tests stochastic policies)";
  /// Config keys: p, horizon.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed.
  stochastic(const env_config& config, env_seed seed);

  void reset(const env_rows& rows) override;
  void step(const env_rows& rows) override;
  [[nodiscard]] const space& observation_space() const noexcept override { return observation_space_; }
  [[nodiscard]] const space& action_space() const noexcept override { return action_space_; }
  [[nodiscard]] std::optional<double> optimal_return() const noexcept override { return 1.0; }
  [[nodiscard]] std::optional<double> solved_return() const noexcept override { return 0.97; }

 private:
  space observation_space_;
  space action_space_;
  double p_;
  std::int64_t horizon_;
  std::int64_t t_ = 0;
  double sum_ = 0;     // S
  double sum_sq_ = 0;  // Q
};

}  // namespace coral::envs
