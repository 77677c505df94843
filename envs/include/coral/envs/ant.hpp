#pragma once
/// \file
/// The MuJoCo task `ant`. What every MuJoCo task shares (model,
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

/// `ant`: Gymnasium Ant-v4. A four-legged robot (free root joint; hip and
/// ankle hinges per leg; 8 motors) walks forward in 3D.
///
/// - Model ant.xml: timestep 0.01 (RK4), frame_skip 5 (dt 0.05); nq 15,
///   nv 14, nu 8, nbody 14 (the world included); action Box([-1, 1]^8), in
///   the actuator order of v4 (hip_4, ankle_4, hip_1, ankle_1, hip_2,
///   ankle_2, hip_3, ankle_3).
/// - Observation (27): qpos[2:15] (13), qvel (14); with
///   use_contact_forces=true, then clip(cfrc_ext, contact_force_min,
///   contact_force_max) of all 14 bodies, world included, row by row (84:
///   111 in all, v4's size; v5 drops the world body and has 105). With
///   exclude_current_positions_from_observation=false, qpos from qpos[0]
///   (+2).
/// - Reward: Δx / dt of the torso body's position (mjData::xpos) + healthy
///   reward − ctrl_cost_weight × Σ a², and with use_contact_forces −
///   contact_cost_weight × Σ clip(cfrc_ext)² (v4 charges the contact cost only
///   then). v4 has no forward_reward_weight for Ant.
/// - Healthy: every element of qpos and qvel finite and z = qpos[2] in
///   [healthy_z_min, healthy_z_max] (inclusive, as v4). terminated = not
///   healthy, if terminate_when_unhealthy.
/// - Reset noise: qpos uniform, qvel normal, scale reset_noise_scale.
/// - Keys (v4 defaults): ctrl_cost_weight 0.5, use_contact_forces false,
///   contact_cost_weight 0.0005, healthy_reward 1, terminate_when_unhealthy
///   true, healthy_z_min 0.2, healthy_z_max 1, contact_force_min −1,
///   contact_force_max 1, reset_noise_scale 0.1,
///   exclude_current_positions_from_observation true, frame_skip 5,
///   max_steps 1000, model (which must have a body named `torso`).
///
/// Solved return: 6000 (Gymnasium's reward_threshold for Ant-v4), at the
/// default max_steps.
class ant final : public mujoco_env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "ant";
  /// One-line description.
  static constexpr std::string_view description = "MuJoCo four-legged ant walking forward (Gymnasium Ant-v4)";
  /// The built-in model file.
  static constexpr std::string_view model_file = "ant.xml";
  /// Config keys: see the class comment.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed.
  ant(const env_config& config, env_seed seed);

  [[nodiscard]] std::optional<double> solved_return() const noexcept override;

  [[nodiscard]] bool is_healthy() const noexcept override;
  /// contact_cost_weight × Σ clip(cfrc_ext)² for the current state.
  [[nodiscard]] double contact_cost() const noexcept;

 private:
  void write_observation(std::span<float> obs) const noexcept override;
  [[nodiscard]] double forward_position() const noexcept override;  // the torso body's x
  [[nodiscard]] double extra_cost() const noexcept override;        // contact_cost() if used

  bool use_contact_forces_;
  double contact_cost_weight_;
  double z_min_, z_max_, force_min_, force_max_;
  bool exclude_xy_;
  int torso_ = 0;
};

}  // namespace coral::envs
