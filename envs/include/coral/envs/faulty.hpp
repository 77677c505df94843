#pragma once
/// \file
/// `faulty`: cartpole with faults injected on purpose, so that the runtime's
/// fault handling (`--on-env-error`, non-finite checks, the stall watchdog,
/// the memory limits) is tested from the command line and in ctest.
///
/// Each fault fires in one env (`env`, its index among the run's envs; -1:
/// every env) when that env's own step or reset counter reaches the given
/// value (counted from 1 over the env's life, across episodes; 0: never):
///
/// | key | fault |
/// |---|---|
/// | `throw_step` | step N throws std::runtime_error("injected fault: step N") |
/// | `throw_reset` | reset N throws ("injected fault: reset N"); reset 1 is the first |
/// | `nan_reward` | step N returns a NaN reward |
/// | `nan_obs` | step N writes NaN into observation element 0 |
/// | `inf_obs` | step N writes +inf into observation element 2 |
/// | `stall_step` / `stall_ms` | step N blocks its thread for stall_ms milliseconds |
/// | `alloc_step` / `alloc_mb` | step N allocates alloc_mb MiB, touches every page and keeps it |
/// | `repeat` | true: a fault fires again every N steps (resets) after the first |
///
/// Without faults it is cartpole exactly (same dynamics, rewards, solved return).
/// It takes cartpole's keys except `velocities`: the faults write into the
/// full four-element observation.

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "coral/envs/cartpole.hpp"
#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"

namespace coral::envs {

class faulty final : public env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "faulty";
  /// One-line description.
  static constexpr std::string_view description =
      "cartpole with injected faults: throws, NaN/inf values, stalls, allocations (tests fault handling)";
  /// Config keys: see the file comment.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed.
  faulty(const env_config& config, env_seed seed);

  void reset(const env_rows& rows) override;
  void step(const env_rows& rows) override;
  [[nodiscard]] const space& observation_space() const noexcept override { return inner_.observation_space(); }
  [[nodiscard]] const space& action_space() const noexcept override { return inner_.action_space(); }
  [[nodiscard]] std::optional<double> optimal_return() const noexcept override { return inner_.optimal_return(); }
  [[nodiscard]] std::optional<double> solved_return() const noexcept override { return inner_.solved_return(); }

 private:
  /// True when counter `n` hits the fault set at `at` (0: never).
  [[nodiscard]] bool fires(std::int64_t at, std::int64_t n) const noexcept;

  cartpole inner_;
  bool mine_;  ///< this env is the one the faults are for
  std::int64_t throw_step_, throw_reset_, nan_reward_, nan_obs_, inf_obs_;
  std::int64_t stall_step_, stall_ms_, alloc_step_, alloc_mb_;
  float reward_scale_;
  bool repeat_;
  std::int64_t steps_ = 0;
  std::int64_t resets_ = 0;
  std::vector<std::unique_ptr<char[]>> held_;  ///< what alloc_step allocated
};

}  // namespace coral::envs
