#pragma once
/// \file
/// The MuJoCo task `walker2d`. What every MuJoCo task shares (model,
/// stepping, reset, faults, thread safety) is described in
/// coral/envs/mujoco_env.hpp.

#include <span>
#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/envs/mujoco_env.hpp"

namespace coral::envs {

/// `walker2d`: Gymnasium Walker2d-v4. A two-legged planar walker (root x,
/// z, pitch; thigh, leg, foot hinges per leg; 6 motors) walks forward.
///
/// - Model walker2d.xml: timestep 0.002 (RK4), frame_skip 4 (dt 0.008);
///   nq 9, nv 9, nu 6; action Box([-1, 1]^6).
/// - Observation (17): qpos[1:9] (8), then clip(qvel, −10, 10) (9); with
///   exclude_current_positions_from_observation=false, qpos from qpos[0] (18).
/// - Reward: forward_reward_weight × Δqpos[0] / dt + healthy reward −
///   ctrl_cost_weight × Σ a².
/// - Healthy (strict): z = qpos[1] in (healthy_z_min, healthy_z_max) and
///   angle = qpos[2] in (healthy_angle_min, healthy_angle_max).
///   terminated = not healthy, if terminate_when_unhealthy.
/// - Reset noise: qpos and qvel uniform, scale reset_noise_scale.
/// - Keys (v4 defaults): forward_reward_weight 1, ctrl_cost_weight 0.001,
///   healthy_reward 1, terminate_when_unhealthy true, healthy_z_min 0.8,
///   healthy_z_max 2, healthy_angle_min −1, healthy_angle_max 1,
///   reset_noise_scale 0.005, exclude_current_positions_from_observation
///   true, frame_skip 4, max_steps 1000, model.
///
/// No solved return: Gymnasium registers Walker2d-v4 without a
/// reward_threshold.
class walker2d final : public mujoco_env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "walker2d";
  /// One-line description.
  static constexpr std::string_view description = "MuJoCo two-legged planar walker (Gymnasium Walker2d-v4)";
  /// The built-in model file.
  static constexpr std::string_view model_file = "walker2d.xml";
  /// Config keys: see the class comment.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed.
  walker2d(const env_config& config, env_seed seed);


  [[nodiscard]] bool is_healthy() const noexcept override;

 private:
  void write_observation(std::span<float> obs) const noexcept override;

  double z_min_, z_max_, angle_min_, angle_max_;
  bool exclude_x_;
};

}  // namespace coral::envs
