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
/// ## Rendering
///
/// With coral built with EGL (CORAL_MUJOCO_RENDER; Debian's libegl-dev),
/// render() draws a 480 × 640 frame with MuJoCo's own renderer on an
/// offscreen EGL context (Mesa's surfaceless platform: no display needed;
/// software rendering without a GPU): a side view from a camera that
/// follows body 1 (the torso). The renderer is made on the first render()
/// (its context, about 0.1 s) and kept; it throws coral::error
/// (errors::mujoco_render_unavailable) if no context can be made. Built
/// without EGL, render() returns false.
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
#include "coral/core/rng.hpp"
#include "coral/envs/space.hpp"

// MuJoCo's own types, declared as <mujoco/mjmodel.h> and <mujoco/mjdata.h>
// do: code that reads them includes <mujoco/mujoco.h>.
struct mjModel_;
struct mjData_;

namespace coral::envs {

namespace detail {
class mujoco_renderer;
}

/// The largest file a MuJoCo model may be, or name (an include, a mesh).
inline constexpr std::uint64_t max_mujoco_file_bytes = std::uint64_t{256} << 20;

/// A loaded MuJoCo model, shared read-only by every env built from its file.
using mujoco_model = std::shared_ptr<const mjModel_>;

/// The model in MJCF file `path`, loaded once while anyone holds it: a
/// second call for the same file (by canonical path) returns the same
/// model. Throws config_error naming env `env_name` and the file:
/// errors::mujoco_model_unreadable if it is not a readable regular file of
/// at most max_mujoco_file_bytes, errors::mujoco_model_names_unreadable if a
/// file it names (an <include>, a mesh; found as MuJoCo would find it) is
/// there but not one, errors::mujoco_model_malformed (with MuJoCo's message) if MuJoCo cannot
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
  /// Its mjData: the struct and its buffer, which mj_makeData fills (about
  /// 3.4 MB for the humanoid, the RSS one env adds); not the stack, which
  /// a step barely touches.
  [[nodiscard]] std::size_t heap_bytes() const noexcept override;
  /// Draws the scene (see "Rendering").
  [[nodiscard]] bool render(rgb_frame& frame) const override;

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
  mutable std::unique_ptr<detail::mujoco_renderer> renderer_;  ///< made by the first render()
};

}  // namespace coral::envs
