#pragma once
/// \file
/// `delay`: an env whose step costs a known, random amount of CPU time, for
/// benchmarking samplers against the C / d limit.
///
/// Each step draws d = max(0, mean_us + std_us · N(0, 1)) microseconds from
/// the env's own rng and busy-waits on std::chrono::steady_clock until d has
/// passed since the step began; it never sleeps, so the core stays busy as
/// with a real simulator. reset() does not wait. Otherwise it behaves like
/// noop: observation Box((4,), -inf, inf) = (steps taken, 0, 0, 0), action
/// Discrete(2) ignored, reward 0, truncated after `episode_length` steps.

#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/core/rng.hpp"

namespace coral::envs {

/// Burns a random amount of CPU time per step.
class delay final : public env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "delay";
  /// One-line description.
  static constexpr std::string_view description =
      "each step busy-waits a random time (normal, mean_us/std_us, truncated at 0; benchmarks)";
  /// Config keys: mean_us, std_us, episode_length.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed.
  delay(const env_config& config, env_seed seed);

  void reset(const env_rows& rows) override;
  void step(const env_rows& rows) override;
  [[nodiscard]] const space& observation_space() const noexcept override { return observation_space_; }
  [[nodiscard]] const space& action_space() const noexcept override { return action_space_; }

  /// The busy-wait duration of the next step, in microseconds (draws from the rng).
  [[nodiscard]] double draw_delay_us() noexcept;

 private:
  space observation_space_;
  space action_space_;
  rng rng_;
  double mean_us_;
  double std_us_;
  std::int64_t episode_length_;
  std::int64_t steps_ = 0;
};

}  // namespace coral::envs
