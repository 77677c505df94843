// The machinery every MuJoCo task shares: model and data, spaces, stepping,
// resetting with noise, and the stability checks.

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <mujoco/mujoco.h>

#include "coral/core/error.hpp"
#include "coral/envs/errors.hpp"
#include "coral/envs/mujoco_env.hpp"
#include "renderer.hpp"

namespace coral::envs {
namespace {

std::string resolve_model_path(const env_config& config, std::string_view builtin_file) {
  const std::string& given = config.get_string("model");
  return given.empty() ? find_mujoco_model(config.env_name(), builtin_file) : given;
}

space actuator_box(const mjModel& m) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  std::vector<float> low(static_cast<std::size_t>(m.nu), -inf);
  std::vector<float> high(static_cast<std::size_t>(m.nu), inf);
  for (int i = 0; i < m.nu; ++i) {
    if (m.actuator_ctrllimited[i] == 0) continue;
    low[static_cast<std::size_t>(i)] = static_cast<float>(m.actuator_ctrlrange[2 * i]);
    high[static_cast<std::size_t>(i)] = static_cast<float>(m.actuator_ctrlrange[2 * i + 1]);
  }
  return space::box({static_cast<std::size_t>(m.nu)}, std::move(low), std::move(high));
}

constexpr std::pair<int, std::string_view> bad_value_warnings[] = {
    {mjWARN_BADQPOS, "bad qpos"}, {mjWARN_BADQVEL, "bad qvel"}, {mjWARN_BADQACC, "bad qacc"}, {mjWARN_BADCTRL, "bad ctrl"}};

}  // namespace

std::vector<config_key> mujoco_env::common_keys(std::string_view builtin_file, int frame_skip) {
  return {{.name = "max_steps",
           .type = config_type::integer,
           .default_value = "1000",
           .description = "steps after which an episode is truncated",
           .min = 1},
          {.name = "frame_skip",
           .type = config_type::integer,
           .default_value = std::to_string(frame_skip),
           .description = "MuJoCo steps per env step (dt = timestep x frame_skip)",
           .min = 1,
           .max = 1000},
          {.name = "model",
           .type = config_type::text,
           .default_value = "",
           .description = fmt::format("MJCF file to load instead of the built-in {} (empty: built-in)", builtin_file)}};
}

mujoco_env::mujoco_env(const env_config& config, env_seed seed, std::string_view builtin_file, shape required,
                       std::size_t obs_dim, terms task_terms)
    : env_name_(config.env_name()),
      model_path_(resolve_model_path(config, builtin_file)),
      model_(load_mujoco_model(env_name_, model_path_)),
      observation_space_(space::box({obs_dim}, -std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::infinity())),
      action_space_(actuator_box(*model_)),
      rng_(seed),
      frame_skip_(static_cast<int>(config.get_int("frame_skip"))),
      max_steps_(config.get_int("max_steps")),
      terms_(task_terms) {
  const mjModel& m = *model_;
  if (m.nq != required.nq || m.nv != required.nv || m.nu != required.nu ||
      (required.nbody >= 0 && m.nbody != required.nbody)) {
    reject_model(fmt::format("it has nq={}, nv={}, nu={}, nbody={}; the task needs nq={}, nv={}, nu={}{}", m.nq,
                             m.nv, m.nu, m.nbody, required.nq, required.nv, required.nu,
                             required.nbody >= 0 ? fmt::format(", nbody={}", required.nbody) : std::string()));
  }
  data_ = mj_makeData(&m);
  if (data_ == nullptr) throw error(fmt::format(fmt::runtime(errors::mujoco_error), "mj_makeData failed"));
}

mujoco_env::~mujoco_env() {
  renderer_.reset();
  if (data_ != nullptr) mj_deleteData(data_);
}

bool mujoco_env::render(rgb_frame& frame) const {
#ifdef CORAL_MUJOCO_RENDER
  if (renderer_ == nullptr) renderer_ = std::make_unique<detail::mujoco_renderer>(*model_);
  renderer_->draw(*model_, *data_, frame);
  return true;
#else
  static_cast<void>(frame);
  return false;
#endif
}

std::size_t mujoco_env::heap_bytes() const noexcept {
  // The stack (nstack mjtNums, 10 MB for the humanoid) is reserved but a
  // step touches little of it: it counts against `ulimit -v`, not against
  // the memory a run takes, which the estimate bounds from below.
  return sizeof(mjData) + static_cast<std::size_t>(data_->nbuffer);
}

double mujoco_env::dt() const noexcept { return model_->opt.timestep * frame_skip_; }

void mujoco_env::reject_model(std::string_view reason) const {
  throw config_error(fmt::format(fmt::runtime(errors::mujoco_model_mismatch), env_name_, model_path_, reason));
}

double mujoco_env::forward_position() const noexcept { return data_->qpos[0]; }

float* mujoco_env::write_state(float* out, int skip, std::optional<double> velocity_clip) const noexcept {
  const mjModel& m = *model_;
  for (int i = skip; i < m.nq; ++i) *out++ = static_cast<float>(data_->qpos[i]);
  for (int i = 0; i < m.nv; ++i) {
    const double v = data_->qvel[i];
    *out++ = static_cast<float>(velocity_clip ? std::clamp(v, -*velocity_clip, *velocity_clip) : v);
  }
  return out;
}

void mujoco_env::set_state(std::span<const double> qpos, std::span<const double> qvel) {
  const mjModel& m = *model_;
  if (qpos.size() != static_cast<std::size_t>(m.nq) || qvel.size() != static_cast<std::size_t>(m.nv)) {
    throw usage_error(fmt::format(fmt::runtime(errors::row_width), "set_state: qpos and qvel",
                                  qpos.size() + qvel.size(), m.nq + m.nv));
  }
  std::copy(qpos.begin(), qpos.end(), data_->qpos);
  std::copy(qvel.begin(), qvel.end(), data_->qvel);
  mj_forward(&m, data_);
}

void mujoco_env::reset(const env_rows& rows) {
  reset_state();
  write_observation(rows.observation());
}

void mujoco_env::step(const env_rows& rows) {
  const auto action = rows.continuous_action();
  const double before = forward_position();
  simulate(action);
  const double velocity = (forward_position() - before) / dt();
  const bool healthy = is_healthy();
  const double healthy_reward = healthy || terms_.terminate_when_unhealthy ? terms_.healthy_reward : 0.0;
  double action_sq = 0.0;
  for (const float a : action) action_sq += static_cast<double>(a) * static_cast<double>(a);
  // Summed in v4's order: the rewards, then the costs.
  const double reward = (terms_.forward_reward_weight * velocity + healthy_reward) -
                        (terms_.ctrl_cost_weight * action_sq + extra_cost());
  write_observation(rows.observation());
  rows.reward() = static_cast<float>(reward);
  rows.terminated() = static_cast<std::uint8_t>(terms_.terminate_when_unhealthy && !healthy);
  rows.truncated() = static_cast<std::uint8_t>(steps_ >= max_steps_);
}

void mujoco_env::reset_state() {
  const mjModel& m = *model_;
  const double noise = terms_.reset_noise_scale;
  const velocity_noise kind = terms_.velocity_noise_kind;
  mj_resetData(&m, data_);
  for (int i = 0; i < m.nq; ++i) data_->qpos[i] = m.qpos0[i] + rng_.uniform(-noise, noise);
  for (int i = 0; i < m.nv; ++i) {
    data_->qvel[i] = kind == velocity_noise::uniform ? rng_.uniform(-noise, noise) : noise * rng_.normal();
  }
  mj_forward(&m, data_);
  steps_ = 0;
  check_stable();
}

void mujoco_env::simulate(std::span<const float> action) {
  const mjModel& m = *model_;
  for (int i = 0; i < m.nu; ++i) data_->ctrl[i] = action[static_cast<std::size_t>(i)];
  for (int k = 0; k < frame_skip_; ++k) mj_step(&m, data_);
  // MuJoCo computes cacc, cfrc_int and cfrc_ext only on request; Gymnasium
  // requests them after every step, so cfrc_ext holds the contact forces.
  mj_rnePostConstraint(&m, data_);
  ++steps_;
  check_stable();
}

void mujoco_env::check_stable() const {
  const mjModel& m = *model_;
  for (const auto& [warning, what] : bad_value_warnings) {
    const mjWarningStat& stat = data_->warning[warning];
    if (stat.number > 0) {
      throw error(fmt::format(fmt::runtime(errors::mujoco_unstable),
                              fmt::format("{} at degree of freedom {}", what, stat.lastinfo), data_->time));
    }
  }
  for (int i = 0; i < m.nq; ++i) {
    if (!std::isfinite(data_->qpos[i])) {
      throw error(fmt::format(fmt::runtime(errors::mujoco_unstable), fmt::format("qpos[{}] = {}", i, data_->qpos[i]),
                              data_->time));
    }
  }
  for (int i = 0; i < m.nv; ++i) {
    if (!std::isfinite(data_->qvel[i])) {
      throw error(fmt::format(fmt::runtime(errors::mujoco_unstable), fmt::format("qvel[{}] = {}", i, data_->qvel[i]),
                              data_->time));
    }
  }
}

}  // namespace coral::envs
