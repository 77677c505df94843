#pragma once
/// \file
/// The MuJoCo task `hopper`. What every MuJoCo task shares (model,
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

/// `hopper`: Gymnasium Hopper-v4. A one-legged planar robot (root x, z,
/// pitch; thigh, leg, foot hinges; 3 motors) hops forward.
///
/// - Model hopper.xml: timestep 0.002 (RK4), frame_skip 4 (dt 0.008); nq 6,
///   nv 6, nu 3; action Box([-1, 1]^3).
/// - Observation (11): qpos[1:6] (5), then clip(qvel, −10, 10) (6); with
///   exclude_current_positions_from_observation=false, qpos from qpos[0] (12).
/// - Reward: forward_reward_weight × Δqpos[0] / dt + healthy reward −
///   ctrl_cost_weight × Σ a².
/// - Healthy (all strict): every element of (qpos, qvel)[2:] (unclipped) in
///   (healthy_state_min, healthy_state_max); z = qpos[1] in (healthy_z_min,
///   healthy_z_max); angle = qpos[2] in (healthy_angle_min,
///   healthy_angle_max). terminated = not healthy, if
///   terminate_when_unhealthy.
/// - Reset noise: qpos and qvel uniform, scale reset_noise_scale.
/// - Keys (v4 defaults): forward_reward_weight 1, ctrl_cost_weight 0.001,
///   healthy_reward 1, terminate_when_unhealthy true, healthy_state_min −100,
///   healthy_state_max 100, healthy_z_min 0.7, healthy_z_max the largest
///   double (v4: +inf; the same test for every finite or NaN z),
///   healthy_angle_min −0.2, healthy_angle_max 0.2, reset_noise_scale 0.005,
///   exclude_current_positions_from_observation true, frame_skip 4,
///   max_steps 1000, model.
///
/// Solved return: 3800 (Gymnasium's reward_threshold for Hopper-v4), at the
/// default max_steps.
class hopper final : public mujoco_env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "hopper";
  /// One-line description.
  static constexpr std::string_view description = "MuJoCo one-legged planar hopper (Gymnasium Hopper-v4)";
  /// The built-in model file.
  static constexpr std::string_view model_file = "hopper.xml";
  /// Config keys: see the class comment.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed.
  hopper(const env_config& config, env_seed seed);

  [[nodiscard]] std::optional<double> solved_return() const noexcept override;

  [[nodiscard]] bool is_healthy() const noexcept override;

 private:
  void write_observation(std::span<float> obs) const noexcept override;

  double state_min_, state_max_, z_min_, z_max_, angle_min_, angle_max_;
  bool exclude_x_;
};

}  // namespace coral::envs
