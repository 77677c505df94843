#pragma once
/// \file
/// The MuJoCo envs: `halfcheetah`, `hopper`, `walker2d`, `ant`, `humanoid`
/// and `inverted_pendulum`, each following Gymnasium's v4 definition of the
/// task (observation layout, reward terms and weights, healthy ranges and
/// termination, frame skip, reset noise, 1000-step time limit), so that
/// returns compare with published ones. Built when CORAL_WITH_MUJOCO is on
/// (the default); this header does not include MuJoCo's.
///
/// ## Common to every task
///
/// - Model: the MJCF file envs/models/<name>.xml written for coral from the
///   published dimensions (installed under share/coral/models), or any file
///   given with the `model` key. A model file is loaded once and shared
///   read-only (one mjModel per file, cached by path while any env uses it);
///   each env owns its mjData. The model's dimensions must be the built-in
///   model's (nq, nv, nu, and nbody where the observation has per-body
///   entries): errors::mujoco_model_mismatch otherwise.
/// - Built-in model files are looked for in $CORAL_MODEL_DIR, then the
///   install prefix's share/coral/models, then the source tree's envs/models.
/// - Action: Box over the actuators' ctrlrange (±inf for an actuator that is
///   not ctrllimited). The action is written to mjData::ctrl as given (MuJoCo
///   clamps it to ctrlrange); the control cost uses the action as given,
///   as Gymnasium does.
/// - A step: ctrl = action; mj_step frame_skip times; mj_rnePostConstraint
///   once (as Gymnasium's MujocoEnv does after stepping, so cfrc_ext holds
///   the real contact forces: no deviation from v4). dt = timestep ×
///   frame_skip. Velocities in rewards are (position after − position
///   before) / dt, positions read from mjData as it stands before and after
///   the step.
/// - Reset: mj_resetData, then qpos = qpos0 + noise, qvel = noise (uniform in
///   ±reset_noise_scale, or normal with std reset_noise_scale where v4 uses
///   normal noise), then mj_forward. The observation after a reset has
///   cfrc_ext = 0 (mj_forward does not compute it), as in v4.
/// - truncated when the episode reaches `max_steps` steps (default 1000);
///   terminated and truncated may both be set.
/// - "Healthy reward" is healthy_reward × (healthy or
///   terminate_when_unhealthy): the terminating step earns it too, as in v4.
/// - Observations are written as floats (Gymnasium's are float64).
///
/// ## Faults
///
/// A simulation that becomes unstable is an env fault (handled by
/// `--on-env-error`): after every step and reset, MuJoCo's bad-value
/// warnings (mjWARN_BADQPOS, BADQVEL, BADQACC, BADCTRL: MuJoCo has then
/// already reset the state) or a non-finite qpos/qvel throw coral::error
/// (errors::mujoco_unstable). Other warnings (contact or constraint buffer
/// full, near-singular inertia) are counted by MuJoCo but not faults.
/// MuJoCo's default error handler ends the process; coral installs, once per
/// process, an error handler that throws coral::error (errors::mujoco_error)
/// and a warning handler that logs at debug level (MuJoCo's default prints
/// to stdout and writes MUJOCO_LOG.TXT). A MuJoCo error inside a step is
/// therefore an env fault; inside env construction it fails the build of the
/// env. After a fault the env must be reset before it is stepped again.
///
/// Thread safety: the model cache and the handler installation may be used
/// from any thread. MuJoCo's loader swaps the process-wide error handler
/// while it compiles a model, so build envs before stepping others (coral
/// builds every env before anything runs). An env is used by one thread at a
/// time.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/envs/rng.hpp"
#include "coral/envs/space.hpp"

// MuJoCo's own types, declared as <mujoco/mjmodel.h> and <mujoco/mjdata.h>
// do: code that reads them includes <mujoco/mujoco.h>.
struct mjModel_;
struct mjData_;

namespace coral::envs {

/// A loaded MuJoCo model, shared read-only by every env built from its file.
using mujoco_model = std::shared_ptr<const mjModel_>;

/// The model in MJCF file `path`, loaded once while anyone holds it: a
/// second call for the same file (by canonical path) returns the same
/// model. Throws config_error naming env `env_name` and the file:
/// errors::mujoco_model_missing if it does not exist,
/// errors::mujoco_model_malformed (with MuJoCo's message) if MuJoCo cannot
/// load it. Thread safe.
[[nodiscard]] mujoco_model load_mujoco_model(std::string_view env_name, const std::string& path);

/// The folders searched for built-in model files, in order: $CORAL_MODEL_DIR
/// (if set), the install prefix's share/coral/models, the source tree's
/// envs/models.
[[nodiscard]] std::vector<std::string> mujoco_model_dirs();

/// The path of built-in model file `file` in the first folder of
/// mujoco_model_dirs() that has it. Throws config_error
/// (errors::mujoco_model_not_found, naming every folder tried).
[[nodiscard]] std::string find_mujoco_model(std::string_view env_name, std::string_view file);

/// Installs coral's MuJoCo error and warning handlers (see the file
/// comment); once per process, thread safe. Every MuJoCo env calls it.
void install_mujoco_handlers();

/// The machinery the MuJoCo tasks share: the model, the env's mjData, the
/// spaces, the step counter, stepping and resetting with noise. The tasks
/// below add their observation, reward and termination.
class mujoco_env : public env {
 public:
  /// Whether reset noise on qvel is uniform or normal (qpos is always uniform).
  enum class velocity_noise { uniform, normal };

  /// A task's reward weights and reset noise.
  struct terms {
    double forward_reward_weight = 0;
    double ctrl_cost_weight = 0;
    double healthy_reward = 0;
    bool terminate_when_unhealthy = false;
    double reset_noise_scale = 0;
    velocity_noise velocity_noise_kind = velocity_noise::uniform;
  };

  /// Config keys every MuJoCo task has: max_steps, frame_skip (default
  /// `frame_skip`) and model (built-in file `builtin_file`).
  [[nodiscard]] static std::vector<config_key> common_keys(std::string_view builtin_file, int frame_skip);

  ~mujoco_env() override;
  mujoco_env(const mujoco_env&) = delete;
  mujoco_env& operator=(const mujoco_env&) = delete;

  [[nodiscard]] const space& observation_space() const noexcept override { return observation_space_; }
  [[nodiscard]] const space& action_space() const noexcept override { return action_space_; }

  /// The shared model (read only).
  [[nodiscard]] const mjModel_& model() const noexcept { return *model_; }
  /// This env's simulation state.
  [[nodiscard]] const mjData_& data() const noexcept { return *data_; }
  /// The path of the model file in use.
  [[nodiscard]] const std::string& model_path() const noexcept { return model_path_; }
  /// Seconds of simulated time per step: timestep × frame_skip.
  [[nodiscard]] double dt() const noexcept;
  /// Steps taken in the current episode.
  [[nodiscard]] std::int64_t steps() const noexcept { return steps_; }

  /// Sets qpos and qvel (sizes nq and nv) and recomputes everything derived
  /// from them (mj_forward), as Gymnasium's set_state does; the step count
  /// is kept. For tests: states at the healthy-range edges.
  void set_state(std::span<const double> qpos, std::span<const double> qvel);

  /// Starts an episode: reset noise (see the file comment), then the first
  /// observation.
  void reset(const env_rows& rows) final;

  /// One step, in v4's order: the forward position before, simulate(), the
  /// forward position after, health, reward = (forward_reward_weight ×
  /// velocity + healthy reward) − (ctrl_cost_weight × Σ a² + extra_cost()),
  /// the observation, terminated = not healthy if terminate_when_unhealthy,
  /// truncated at max_steps.
  void step(const env_rows& rows) final;

  /// Whether the current state is healthy (the task's ranges; true for a
  /// task without any).
  [[nodiscard]] virtual bool is_healthy() const noexcept { return true; }

 protected:
  /// The dimensions a task's model must have (nbody < 0: any).
  struct shape {
    int nq = 0;
    int nv = 0;
    int nu = 0;
    int nbody = -1;
  };

  /// Loads the model (the `model` key, or built-in file `builtin_file`),
  /// checks it has `required` dimensions, makes this env's mjData and the
  /// spaces (observation: Box(-inf, inf, (obs_dim,))). Reads the keys
  /// `model`, `frame_skip` and `max_steps`.
  mujoco_env(const env_config& config, env_seed seed, std::string_view builtin_file, shape required,
             std::size_t obs_dim, terms task_terms);

  /// The position whose change per dt is the forward velocity (default qpos[0]).
  [[nodiscard]] virtual double forward_position() const noexcept;
  /// A cost subtracted from the reward besides the control cost (default 0).
  [[nodiscard]] virtual double extra_cost() const noexcept { return 0.0; }
  /// Writes the task's observation of the current state.
  virtual void write_observation(std::span<float> obs) const noexcept = 0;

  /// Writes qpos from element `skip` on, then qvel (clipped to ±velocity_clip
  /// if given), as floats; returns the end of what it wrote.
  float* write_state(float* out, int skip, std::optional<double> velocity_clip = std::nullopt) const noexcept;

  /// ctrl = action, mj_step frame_skip times, mj_rnePostConstraint, and
  /// counts the step. Throws coral::error (errors::mujoco_unstable) if the
  /// simulation became unstable. Allocates nothing otherwise.
  void simulate(std::span<const float> action);

  /// The episode length limit.
  [[nodiscard]] std::int64_t max_steps() const noexcept { return max_steps_; }

  /// Throws config_error (errors::mujoco_model_mismatch) for this env's model.
  [[noreturn]] void reject_model(std::string_view reason) const;

 private:
  void reset_state();
  void check_stable() const;

  std::string env_name_;
  std::string model_path_;
  mujoco_model model_;
  mjData_* data_ = nullptr;
  space observation_space_;
  space action_space_;
  rng rng_;
  int frame_skip_;
  std::int64_t max_steps_;
  std::int64_t steps_ = 0;
  terms terms_;
};

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
