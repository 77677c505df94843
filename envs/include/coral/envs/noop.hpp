#pragma once
/// \file
/// `noop`: a trivial env for measuring the overhead of everything but the env.
///
/// Observation Box((4,), -inf, inf): (steps taken in this episode, 0, 0, 0).
/// Action Discrete(2), ignored. Reward 0. The episode is truncated after
/// `episode_length` steps (default 1000). No optimal or solved return.

#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/core/rng.hpp"

namespace coral::envs {

/// Does nothing, quickly.
class noop final : public env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "noop";
  /// One-line description.
  static constexpr std::string_view description = "trivial step, 4-float observation (benchmarks)";
  /// Config keys: episode_length.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed.
  noop(const env_config& config, env_seed seed);

  void reset(const env_rows& rows) override;
  void step(const env_rows& rows) override;
  [[nodiscard]] const space& observation_space() const noexcept override { return observation_space_; }
  [[nodiscard]] const space& action_space() const noexcept override { return action_space_; }

 private:
  space observation_space_;
  space action_space_;
  std::int64_t episode_length_;
  std::int64_t steps_ = 0;
};

}  // namespace coral::envs
