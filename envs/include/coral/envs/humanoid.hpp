#pragma once
/// \file
/// The MuJoCo task `humanoid`. What every MuJoCo task shares (model,
/// stepping, reset, faults, thread safety) is described in
/// coral/envs/mujoco_env.hpp.

#include <span>
#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/envs/mujoco_env.hpp"

namespace coral::envs {

/// `humanoid`: Gymnasium Humanoid-v4. A 3D humanoid (free root joint, 17
/// hinges, 17 motors) walks forward without falling.
///
/// - Model humanoid.xml: timestep 0.003 (RK4, Newton solver, 50
///   iterations), frame_skip 5 (dt 0.015); nq 24, nv 23, nu 17, nbody 14
///   (the world included); action Box([-0.4, 0.4]^17).
/// - Observation (376): qpos[2:24] (22), qvel (23), cinert (14 × 10 = 140),
///   cvel (14 × 6 = 84), qfrc_actuator (23), cfrc_ext (14 × 6 = 84), every
///   per-body array including the world body, as v4 (v5 drops it: 348).
///   With exclude_current_positions_from_observation=false, qpos from
///   qpos[0] (378).
/// - Reward: forward_reward_weight × Δx / dt of the mass centre (Σ
///   body_mass × xipos / Σ body_mass) + healthy reward − ctrl_cost_weight ×
///   Σ ctrl² (v4 reads mjData::ctrl, which holds the action as given). v4 has no
///   contact cost in its reward (its documentation mentions one; its code
///   does not).
/// - Healthy (strict): z = qpos[2] in (healthy_z_min, healthy_z_max).
///   terminated = not healthy, if terminate_when_unhealthy.
/// - Reset noise: qpos and qvel uniform, scale reset_noise_scale.
/// - Keys (v4 defaults): forward_reward_weight 1.25, ctrl_cost_weight 0.1,
///   healthy_reward 5, terminate_when_unhealthy true, healthy_z_min 1,
///   healthy_z_max 2, reset_noise_scale 0.01,
///   exclude_current_positions_from_observation true, frame_skip 5,
///   max_steps 1000, model.
///
/// No solved return: Gymnasium registers Humanoid-v4 without a
/// reward_threshold.
class humanoid final : public mujoco_env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "humanoid";
  /// One-line description.
  static constexpr std::string_view description = "MuJoCo 3D humanoid walking forward (Gymnasium Humanoid-v4)";
  /// The built-in model file.
  static constexpr std::string_view model_file = "humanoid.xml";
  /// Config keys: see the class comment.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed.
  humanoid(const env_config& config, env_seed seed);


  [[nodiscard]] bool is_healthy() const noexcept override;
  /// The x coordinate of the mass centre for the current state.
  [[nodiscard]] double mass_centre_x() const noexcept;

 private:
  void write_observation(std::span<float> obs) const noexcept override;
  [[nodiscard]] double forward_position() const noexcept override { return mass_centre_x(); }

  double z_min_, z_max_;
  bool exclude_xy_;
};

}  // namespace coral::envs
