// The six MuJoCo tasks: observation, reward and termination of each, as
// Gymnasium v4 defines them (see each task's header for its definition).

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <mujoco/mujoco.h>

#include "coral/envs/ant.hpp"
#include "coral/envs/halfcheetah.hpp"
#include "coral/envs/hopper.hpp"
#include "coral/envs/humanoid.hpp"
#include "coral/envs/inverted_pendulum.hpp"
#include "coral/envs/walker2d.hpp"

namespace coral::envs {
namespace {

config_key real_key(std::string name, std::string default_value, std::string description,
                    std::optional<double> min = std::nullopt) {
  return {.name = std::move(name), .type = config_type::real, .default_value = std::move(default_value),
          .description = std::move(description), .min = min};
}

config_key bool_key(std::string name, std::string default_value, std::string description) {
  return {.name = std::move(name), .type = config_type::boolean, .default_value = std::move(default_value),
          .description = std::move(description)};
}

config_key noise_key(std::string default_value) {
  return real_key("reset_noise_scale", std::move(default_value),
                  "scale of the noise added to the initial qpos and qvel", 0.0);
}

config_key exclude_key(std::string_view what) {
  return bool_key("exclude_current_positions_from_observation", "true",
                  fmt::format("leave the {} out of the observation", what));
}

void add_healthy_keys(std::vector<config_key>& keys, std::string healthy_reward) {
  keys.push_back(real_key("healthy_reward", std::move(healthy_reward), "reward for every step taken while healthy"));
  keys.push_back(bool_key("terminate_when_unhealthy", "true", "end the episode (terminated) when unhealthy"));
}

void add_range_keys(std::vector<config_key>& keys, const std::string& name, std::string min, std::string max,
                    std::string_view what) {
  keys.push_back(real_key(name + "_min", std::move(min), fmt::format("lower bound of the healthy {}", what)));
  keys.push_back(real_key(name + "_max", std::move(max), fmt::format("upper bound of the healthy {}", what)));
}

/// Writes `n` doubles from `from` as floats, clipped to [low, high]; returns the end of what it wrote.
float* put(float* to, const double* from, int n, double low = -std::numeric_limits<double>::infinity(),
           double high = std::numeric_limits<double>::infinity()) noexcept {
  for (int i = 0; i < n; ++i) to[i] = static_cast<float>(std::clamp(from[i], low, high));
  return to + n;
}

bool strictly_inside(double x, double low, double high) noexcept { return low < x && x < high; }

/// The largest double as config text: the "no upper bound" of v4's +inf,
/// which a real key cannot hold. A function, not a global: the registry may
/// ask for the keys during static initialisation.
std::string largest_double() { return fmt::format("{}", std::numeric_limits<double>::max()); }

}  // namespace

// ---------------------------------------------------------------- halfcheetah

std::vector<config_key> halfcheetah::config_keys() {
  auto keys = common_keys(model_file, 5);
  keys.push_back(real_key("forward_reward_weight", "1", "weight of the forward velocity in the reward"));
  keys.push_back(real_key("ctrl_cost_weight", "0.1", "weight of the control cost (sum of squared actions)"));
  keys.push_back(noise_key("0.1"));
  keys.push_back(exclude_key("x position (qpos[0])"));
  return keys;
}

halfcheetah::halfcheetah(const env_config& config, env_seed seed)
    : mujoco_env(config, seed, model_file, {.nq = 9, .nv = 9, .nu = 6},
                 config.get_bool("exclude_current_positions_from_observation") ? 17 : 18,
                 {.forward_reward_weight = config.get_float("forward_reward_weight"),
                  .ctrl_cost_weight = config.get_float("ctrl_cost_weight"),
                  .reset_noise_scale = config.get_float("reset_noise_scale"),
                  .velocity_noise_kind = velocity_noise::normal}),
      exclude_x_(config.get_bool("exclude_current_positions_from_observation")) {}

std::optional<double> halfcheetah::solved_return() const noexcept {
  return max_steps() == 1000 ? std::optional<double>(4800.0) : std::nullopt;
}

void halfcheetah::write_observation(std::span<float> obs) const noexcept { write_state(obs.data(), exclude_x_ ? 1 : 0); }

// --------------------------------------------------------------------- hopper

namespace {
mujoco_env::terms walking_terms(const env_config& config) {
  return {.forward_reward_weight = config.get_float("forward_reward_weight"),
          .ctrl_cost_weight = config.get_float("ctrl_cost_weight"),
          .healthy_reward = config.get_float("healthy_reward"),
          .terminate_when_unhealthy = config.get_bool("terminate_when_unhealthy"),
          .reset_noise_scale = config.get_float("reset_noise_scale")};
}

std::vector<config_key> walking_keys(std::string_view model_file) {
  auto keys = mujoco_env::common_keys(model_file, 4);
  keys.push_back(real_key("forward_reward_weight", "1", "weight of the forward velocity in the reward"));
  keys.push_back(real_key("ctrl_cost_weight", "0.001", "weight of the control cost (sum of squared actions)"));
  add_healthy_keys(keys, "1");
  return keys;
}
}  // namespace

std::vector<config_key> hopper::config_keys() {
  auto keys = walking_keys(model_file);
  add_range_keys(keys, "healthy_state", "-100", "100", "range of every element of (qpos, qvel)[2:]");
  add_range_keys(keys, "healthy_z", "0.7", largest_double(), "torso height qpos[1]");
  add_range_keys(keys, "healthy_angle", "-0.2", "0.2", "torso angle qpos[2]");
  keys.push_back(noise_key("0.005"));
  keys.push_back(exclude_key("x position (qpos[0])"));
  return keys;
}

hopper::hopper(const env_config& config, env_seed seed)
    : mujoco_env(config, seed, model_file, {.nq = 6, .nv = 6, .nu = 3},
                 config.get_bool("exclude_current_positions_from_observation") ? 11 : 12, walking_terms(config)),
      state_min_(config.get_float("healthy_state_min")),
      state_max_(config.get_float("healthy_state_max")),
      z_min_(config.get_float("healthy_z_min")),
      z_max_(config.get_float("healthy_z_max")),
      angle_min_(config.get_float("healthy_angle_min")),
      angle_max_(config.get_float("healthy_angle_max")),
      exclude_x_(config.get_bool("exclude_current_positions_from_observation")) {}

std::optional<double> hopper::solved_return() const noexcept {
  return max_steps() == 1000 ? std::optional<double>(3800.0) : std::nullopt;
}

bool hopper::is_healthy() const noexcept {
  const mjModel& m = model();
  const mjData& d = data();
  for (int i = 2; i < m.nq; ++i) {
    if (!strictly_inside(d.qpos[i], state_min_, state_max_)) return false;
  }
  for (int i = 0; i < m.nv; ++i) {
    if (!strictly_inside(d.qvel[i], state_min_, state_max_)) return false;
  }
  return strictly_inside(d.qpos[1], z_min_, z_max_) && strictly_inside(d.qpos[2], angle_min_, angle_max_);
}

void hopper::write_observation(std::span<float> obs) const noexcept {
  write_state(obs.data(), exclude_x_ ? 1 : 0, 10.0);
}

// ------------------------------------------------------------------- walker2d

std::vector<config_key> walker2d::config_keys() {
  auto keys = walking_keys(model_file);
  add_range_keys(keys, "healthy_z", "0.8", "2", "torso height qpos[1]");
  add_range_keys(keys, "healthy_angle", "-1", "1", "torso angle qpos[2]");
  keys.push_back(noise_key("0.005"));
  keys.push_back(exclude_key("x position (qpos[0])"));
  return keys;
}

walker2d::walker2d(const env_config& config, env_seed seed)
    : mujoco_env(config, seed, model_file, {.nq = 9, .nv = 9, .nu = 6},
                 config.get_bool("exclude_current_positions_from_observation") ? 17 : 18, walking_terms(config)),
      z_min_(config.get_float("healthy_z_min")),
      z_max_(config.get_float("healthy_z_max")),
      angle_min_(config.get_float("healthy_angle_min")),
      angle_max_(config.get_float("healthy_angle_max")),
      exclude_x_(config.get_bool("exclude_current_positions_from_observation")) {}

bool walker2d::is_healthy() const noexcept {
  const mjData& d = data();
  return strictly_inside(d.qpos[1], z_min_, z_max_) && strictly_inside(d.qpos[2], angle_min_, angle_max_);
}

void walker2d::write_observation(std::span<float> obs) const noexcept {
  write_state(obs.data(), exclude_x_ ? 1 : 0, 10.0);
}

// ------------------------------------------------------------------------ ant

std::vector<config_key> ant::config_keys() {
  auto keys = common_keys(model_file, 5);
  keys.push_back(real_key("ctrl_cost_weight", "0.5", "weight of the control cost (sum of squared actions)"));
  keys.push_back(bool_key("use_contact_forces", "false",
                          "add the clipped contact forces (cfrc_ext) to the observation and their cost to the reward"));
  keys.push_back(real_key("contact_cost_weight", "0.0005", "weight of the contact cost (with use_contact_forces)"));
  add_healthy_keys(keys, "1");
  add_range_keys(keys, "healthy_z", "0.2", "1", "torso height qpos[2] (inclusive)");
  keys.push_back(real_key("contact_force_min", "-1", "contact forces are clipped to [contact_force_min, max]"));
  keys.push_back(real_key("contact_force_max", "1", "contact forces are clipped to [min, contact_force_max]"));
  keys.push_back(noise_key("0.1"));
  keys.push_back(exclude_key("x and y position (qpos[0:2])"));
  return keys;
}

namespace {
std::size_t ant_obs_dim(const env_config& config) {
  return (config.get_bool("exclude_current_positions_from_observation") ? 27 : 29) +
         (config.get_bool("use_contact_forces") ? 14 * 6 : 0);
}
}  // namespace

ant::ant(const env_config& config, env_seed seed)
    : mujoco_env(config, seed, model_file,
                 {.nq = 15, .nv = 14, .nu = 8, .nbody = config.get_bool("use_contact_forces") ? 14 : -1},
                 ant_obs_dim(config),
                 {.forward_reward_weight = 1.0,
                  .ctrl_cost_weight = config.get_float("ctrl_cost_weight"),
                  .healthy_reward = config.get_float("healthy_reward"),
                  .terminate_when_unhealthy = config.get_bool("terminate_when_unhealthy"),
                  .reset_noise_scale = config.get_float("reset_noise_scale"),
                  .velocity_noise_kind = velocity_noise::normal}),
      use_contact_forces_(config.get_bool("use_contact_forces")),
      contact_cost_weight_(config.get_float("contact_cost_weight")),
      z_min_(config.get_float("healthy_z_min")),
      z_max_(config.get_float("healthy_z_max")),
      force_min_(config.get_float("contact_force_min")),
      force_max_(config.get_float("contact_force_max")),
      exclude_xy_(config.get_bool("exclude_current_positions_from_observation")) {
  if (force_min_ > force_max_) config.reject("contact_force_min", "must not exceed contact_force_max");
  torso_ = mj_name2id(&model(), mjOBJ_BODY, "torso");
  if (torso_ < 0) reject_model("it has no body named 'torso'");
}

std::optional<double> ant::solved_return() const noexcept {
  return max_steps() == 1000 ? std::optional<double>(6000.0) : std::nullopt;
}

double ant::forward_position() const noexcept { return data().xpos[3 * torso_]; }

double ant::extra_cost() const noexcept { return use_contact_forces_ ? contact_cost() : 0.0; }

bool ant::is_healthy() const noexcept {
  const mjModel& m = model();
  const mjData& d = data();
  for (int i = 0; i < m.nq; ++i) {
    if (!std::isfinite(d.qpos[i])) return false;
  }
  for (int i = 0; i < m.nv; ++i) {
    if (!std::isfinite(d.qvel[i])) return false;
  }
  return z_min_ <= d.qpos[2] && d.qpos[2] <= z_max_;
}

double ant::contact_cost() const noexcept {
  const mjModel& m = model();
  const mjData& d = data();
  double sum = 0.0;
  for (int i = 0; i < 6 * m.nbody; ++i) {
    const double f = std::clamp(d.cfrc_ext[i], force_min_, force_max_);
    sum += f * f;
  }
  return contact_cost_weight_ * sum;
}

void ant::write_observation(std::span<float> obs) const noexcept {
  float* out = write_state(obs.data(), exclude_xy_ ? 2 : 0);
  if (use_contact_forces_) put(out, data().cfrc_ext, 6 * model().nbody, force_min_, force_max_);
}

// ------------------------------------------------------------------- humanoid

std::vector<config_key> humanoid::config_keys() {
  auto keys = common_keys(model_file, 5);
  keys.push_back(real_key("forward_reward_weight", "1.25", "weight of the mass centre's forward velocity"));
  keys.push_back(real_key("ctrl_cost_weight", "0.1", "weight of the control cost (sum of squared controls)"));
  add_healthy_keys(keys, "5");
  add_range_keys(keys, "healthy_z", "1", "2", "torso height qpos[2]");
  keys.push_back(noise_key("0.01"));
  keys.push_back(exclude_key("x and y position (qpos[0:2])"));
  return keys;
}

humanoid::humanoid(const env_config& config, env_seed seed)
    : mujoco_env(config, seed, model_file, {.nq = 24, .nv = 23, .nu = 17, .nbody = 14},
                 config.get_bool("exclude_current_positions_from_observation") ? 376 : 378,
                 {.forward_reward_weight = config.get_float("forward_reward_weight"),
                  .ctrl_cost_weight = config.get_float("ctrl_cost_weight"),
                  .healthy_reward = config.get_float("healthy_reward"),
                  .terminate_when_unhealthy = config.get_bool("terminate_when_unhealthy"),
                  .reset_noise_scale = config.get_float("reset_noise_scale")}),
      z_min_(config.get_float("healthy_z_min")),
      z_max_(config.get_float("healthy_z_max")),
      exclude_xy_(config.get_bool("exclude_current_positions_from_observation")) {}

bool humanoid::is_healthy() const noexcept { return strictly_inside(data().qpos[2], z_min_, z_max_); }

double humanoid::mass_centre_x() const noexcept {
  const mjModel& m = model();
  const mjData& d = data();
  double mass = 0.0;
  double moment = 0.0;
  for (int b = 0; b < m.nbody; ++b) {
    mass += m.body_mass[b];
    moment += m.body_mass[b] * d.xipos[3 * b];
  }
  return moment / mass;
}

void humanoid::write_observation(std::span<float> obs) const noexcept {
  const mjModel& m = model();
  const mjData& d = data();
  float* out = write_state(obs.data(), exclude_xy_ ? 2 : 0);
  out = put(out, d.cinert, 10 * m.nbody);
  out = put(out, d.cvel, 6 * m.nbody);
  out = put(out, d.qfrc_actuator, m.nv);
  put(out, d.cfrc_ext, 6 * m.nbody);
}

// ---------------------------------------------------------- inverted_pendulum

std::vector<config_key> inverted_pendulum::config_keys() {
  auto keys = common_keys(model_file, 2);
  keys.push_back(noise_key("0.01"));
  return keys;
}

inverted_pendulum::inverted_pendulum(const env_config& config, env_seed seed)
    : mujoco_env(config, seed, model_file, {.nq = 2, .nv = 2, .nu = 1}, 4,
                 // Reward 1 every step: a healthy reward that the terminating step earns too.
                 {.healthy_reward = 1.0,
                  .terminate_when_unhealthy = true,
                  .reset_noise_scale = config.get_float("reset_noise_scale")}) {}

std::optional<double> inverted_pendulum::optimal_return() const noexcept {
  return static_cast<double>(max_steps());
}

std::optional<double> inverted_pendulum::solved_return() const noexcept {
  return max_steps() == 1000 ? 950.0 : 0.95 * static_cast<double>(max_steps());
}

bool inverted_pendulum::is_healthy() const noexcept {
  const mjData& d = data();
  for (int i = 0; i < 2; ++i) {
    if (!std::isfinite(d.qpos[i]) || !std::isfinite(d.qvel[i])) return false;
  }
  return std::abs(d.qpos[1]) <= 0.2;
}

void inverted_pendulum::write_observation(std::span<float> obs) const noexcept { write_state(obs.data(), 0); }

}  // namespace coral::envs
