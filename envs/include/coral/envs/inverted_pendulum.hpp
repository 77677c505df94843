#pragma once
/// \file
/// The MuJoCo task `inverted_pendulum`. What every MuJoCo task shares (model,
/// stepping, reset, faults, thread safety) is described in
/// coral/envs/mujoco_env.hpp.

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/envs/mujoco_env.hpp"

namespace coral::envs {

/// `inverted_pendulum`: Gymnasium InvertedPendulum-v4. Keep a pole upright
/// on a cart that slides on a rail (2 joints, 1 motor): the quick MuJoCo check.
///
/// - Model inverted_pendulum.xml: timestep 0.02 (RK4), frame_skip 2 (dt
///   0.04); nq 2, nv 2, nu 1; action Box([-3, 3]).
/// - Observation (4): qpos (cart position, pole angle), qvel.
/// - Reward 1 on every step, the terminating one included.
/// - terminated when an observation element is not finite or |qpos[1]| > 0.2.
/// - Reset noise: qpos and qvel uniform in ±reset_noise_scale (v4: 0.01,
///   fixed; coral exposes it).
/// - Keys: reset_noise_scale 0.01, frame_skip 2, max_steps 1000, model.
///
/// Optimal return: max_steps. Solved at 950 (Gymnasium's reward_threshold
/// for InvertedPendulum-v4), or 0.95 × max_steps if that is changed.
class inverted_pendulum final : public mujoco_env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "inverted_pendulum";
  /// One-line description.
  static constexpr std::string_view description =
      "MuJoCo pole balanced on a sliding cart (Gymnasium InvertedPendulum-v4)";
  /// The built-in model file.
  static constexpr std::string_view model_file = "inverted_pendulum.xml";
  /// Config keys: see the class comment.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed.
  inverted_pendulum(const env_config& config, env_seed seed);

  [[nodiscard]] std::optional<double> optimal_return() const noexcept override;
  [[nodiscard]] std::optional<double> solved_return() const noexcept override;
  /// False once |pole angle| > 0.2 or the observation is not finite.
  [[nodiscard]] bool is_healthy() const noexcept override;

 private:
  void write_observation(std::span<float> obs) const noexcept override;
};

}  // namespace coral::envs
