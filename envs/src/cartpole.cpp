#include "coral/envs/cartpole.hpp"

#include <cmath>
#include <limits>

#include "canvas.hpp"

namespace coral::envs {

std::vector<config_key> cartpole::config_keys() {
  return {{.name = "max_steps",
           .type = config_type::integer,
           .default_value = "500",
           .description = "steps after which an episode is truncated",
           .min = 1},
          {.name = "velocities",
           .type = config_type::boolean,
           .default_value = "true",
           .description = "observe the velocities (false: positions only, x and theta; needs a memory)"}};
}

namespace {

space observation_space_of(bool velocities) {
  constexpr auto x_bound = 2 * static_cast<float>(cartpole::x_threshold);
  constexpr auto theta_bound = 2 * static_cast<float>(cartpole::theta_threshold);
  constexpr auto inf = std::numeric_limits<float>::infinity();
  if (!velocities) return space::box({2}, {-x_bound, -theta_bound}, {x_bound, theta_bound});
  return space::box({4}, {-x_bound, -inf, -theta_bound, -inf}, {x_bound, inf, theta_bound, inf});
}

}  // namespace

cartpole::cartpole(const env_config& config, env_seed seed)
    : observation_space_(observation_space_of(config.get_bool("velocities"))),
      action_space_(space::discrete(2)),
      rng_(seed),
      max_steps_(config.get_int("max_steps")),
      velocities_(config.get_bool("velocities")) {}

std::optional<double> cartpole::optimal_return() const noexcept { return static_cast<double>(max_steps_); }

std::optional<double> cartpole::solved_return() const noexcept {
  return max_steps_ == 500 ? 475.0 : 0.95 * static_cast<double>(max_steps_);
}

cartpole::state cartpole::advance(const state& s, int action) noexcept {
  constexpr double total_mass = mass_cart + mass_pole;
  constexpr double polemass_length = mass_pole * half_length;
  const double force = action == 1 ? force_mag : -force_mag;
  const double cos_theta = std::cos(s.theta);
  const double sin_theta = std::sin(s.theta);
  const double temp = (force + polemass_length * s.theta_dot * s.theta_dot * sin_theta) / total_mass;
  const double theta_acc = (gravity * sin_theta - cos_theta * temp) /
                           (half_length * (4.0 / 3.0 - mass_pole * cos_theta * cos_theta / total_mass));
  const double x_acc = temp - polemass_length * theta_acc * cos_theta / total_mass;
  return state{.x = s.x + tau * s.x_dot,
               .x_dot = s.x_dot + tau * x_acc,
               .theta = s.theta + tau * s.theta_dot,
               .theta_dot = s.theta_dot + tau * theta_acc};
}

void cartpole::write_observation(const env_rows& rows) const noexcept {
  float* obs = rows.observation().data();
  obs[0] = static_cast<float>(state_.x);
  if (velocities_) {
    obs[1] = static_cast<float>(state_.x_dot);
    obs[2] = static_cast<float>(state_.theta);
    obs[3] = static_cast<float>(state_.theta_dot);
  } else {
    obs[1] = static_cast<float>(state_.theta);
  }
}

void cartpole::reset(const env_rows& rows) {
  state_ = state{.x = rng_.uniform(-0.05, 0.05),
                 .x_dot = rng_.uniform(-0.05, 0.05),
                 .theta = rng_.uniform(-0.05, 0.05),
                 .theta_dot = rng_.uniform(-0.05, 0.05)};
  steps_ = 0;
  write_observation(rows);
}

void cartpole::step(const env_rows& rows) {
  state_ = advance(state_, rows.action());
  ++steps_;
  write_observation(rows);
  rows.reward() = 1.0F;
  rows.terminated() = static_cast<std::uint8_t>(state_.x < -x_threshold || state_.x > x_threshold ||
                                                state_.theta < -theta_threshold || state_.theta > theta_threshold);
  rows.truncated() = static_cast<std::uint8_t>(steps_ >= max_steps_);
}

bool cartpole::render(rgb_frame& frame) const {
  using canvas::point;
  using canvas::rgb;
  frame.resize(frame_height, frame_width);
  constexpr double width = frame_width;
  constexpr double scale = width / (2 * x_threshold);  // pixels per metre
  constexpr double track_y = 0.7 * frame_height;
  constexpr double cart_w = 50, cart_h = 30, pole_w = 10;
  canvas::fill(frame, rgb{255, 255, 255});
  canvas::fill_rect(frame, 0, track_y - 1, width, track_y + 1, rgb{0, 0, 0});
  const double cx = width / 2 + state_.x * scale;
  canvas::fill_rect(frame, cx - cart_w / 2, track_y - cart_h / 2, cx + cart_w / 2, track_y + cart_h / 2,
                    rgb{40, 40, 40});
  // Theta is the pole's angle from upright, positive leaning right; y grows down.
  const point pivot{cx, track_y - cart_h / 2 + pole_w / 2};
  const double length = 2 * half_length * scale;
  const point tip{pivot.x + length * std::sin(state_.theta), pivot.y - length * std::cos(state_.theta)};
  canvas::fill_bar(frame, pivot, tip, pole_w, rgb{202, 152, 101});
  canvas::fill_circle(frame, pivot.x, pivot.y, pole_w / 2, rgb{129, 132, 203});
  return true;
}

}  // namespace coral::envs
