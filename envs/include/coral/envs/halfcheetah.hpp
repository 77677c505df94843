#pragma once
/// \file
/// The MuJoCo task `halfcheetah`. What every MuJoCo task shares (model,
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

/// `halfcheetah`: Gymnasium HalfCheetah-v4. A planar cheetah (9 joints: root
/// x, z, pitch and 6 hinged legs; 6 motors) runs forward.
///
/// - Model halfcheetah.xml: timestep 0.01, frame_skip 5 (dt 0.05); nq 9,
///   nv 9, nu 6; action Box([-1, 1]^6).
/// - Observation (17): qpos[1:9] (8: rootz, rooty, the 6 leg angles), then
///   qvel (9). With exclude_current_positions_from_observation=false, qpos
///   starts at qpos[0] (18).
/// - Reward: forward_reward_weight × Δqpos[0] / dt − ctrl_cost_weight × Σ a².
/// - Never terminates; truncated at max_steps.
/// - Reset noise: qpos uniform, qvel normal, scale reset_noise_scale.
/// - Keys (v4 defaults): forward_reward_weight 1, ctrl_cost_weight 0.1,
///   reset_noise_scale 0.1, exclude_current_positions_from_observation true,
///   frame_skip 5, max_steps 1000, model.
///
/// Solved return: 4800 (Gymnasium's reward_threshold for HalfCheetah-v4),
/// at the default max_steps.
class halfcheetah final : public mujoco_env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "halfcheetah";
  /// One-line description.
  static constexpr std::string_view description = "MuJoCo planar cheetah running forward (Gymnasium HalfCheetah-v4)";
  /// The built-in model file.
  static constexpr std::string_view model_file = "halfcheetah.xml";
  /// Config keys: see the class comment.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed.
  halfcheetah(const env_config& config, env_seed seed);

  [[nodiscard]] std::optional<double> solved_return() const noexcept override;

 private:
  void write_observation(std::span<float> obs) const noexcept override;

  bool exclude_x_;
};

}  // namespace coral::envs
