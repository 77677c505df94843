#include "coral/envs/minatar_freeway.hpp"

#include <cstdlib>

namespace coral::envs::minatar {

std::vector<config_key> freeway::game_keys() {
  return {{.name = "time_limit",
           .type = config_type::integer,
           .default_value = "2500",
           .description = "frames before the episode is truncated (on the step after the countdown passes 0)",
           .min = 0,
           .max = 1e9}};
}

freeway::freeway(const env_config& config) : time_limit_(static_cast<int>(config.get_int("time_limit"))) {}

void freeway::new_speeds(rng& r) noexcept {
  for (car& c : state_.cars) {
    const int period = 1 + static_cast<int>(r.below(5));
    c.velocity = r.uniform() < 0.5 ? -period : period;
  }
}

void freeway::reset(rng& r) noexcept {
  state_ = state{};
  state_.time_left = time_limit_;
  new_speeds(r);
  for (car& c : state_.cars) {
    c.x = 0;
    c.countdown = std::abs(c.velocity);
  }
}

step_result freeway::step(action a, rng& r) noexcept {
  state& s = state_;
  step_result out;
  if (s.move_countdown == 0 && (a == action::up || a == action::down)) {
    s.move_countdown = chicken_period;
    s.chicken_y = a == action::up ? (s.chicken_y > 0 ? s.chicken_y - 1 : 0)
                                  : (s.chicken_y < grid_size - 1 ? s.chicken_y + 1 : grid_size - 1);
  }
  if (s.chicken_y == 0) {
    out.reward = 1.0F;
    new_speeds(r);
    s.chicken_y = grid_size - 1;
  }
  for (int i = 0; i < lanes; ++i) {
    car& c = s.cars[i];
    const int row = i + 1;
    if (c.x == chicken_column && row == s.chicken_y) s.chicken_y = grid_size - 1;
    if (c.countdown == 0) {
      c.countdown = std::abs(c.velocity);
      c.x += c.velocity > 0 ? 1 : -1;
      if (c.x < 0) c.x = grid_size - 1;
      if (c.x >= grid_size) c.x = 0;
      if (c.x == chicken_column && row == s.chicken_y) s.chicken_y = grid_size - 1;
    } else {
      --c.countdown;
    }
  }
  if (s.move_countdown > 0) --s.move_countdown;
  --s.time_left;
  out.truncated = s.time_left < 0;
  return out;
}

void freeway::draw(float* obs) const noexcept {
  const state& s = state_;
  mark(obs, channels, s.chicken_y, chicken_column, 0);
  for (int i = 0; i < lanes; ++i) {
    const car& c = s.cars[i];
    mark(obs, channels, i + 1, c.x, 1);
    int back = c.velocity > 0 ? c.x - 1 : c.x + 1;
    if (back < 0) back = grid_size - 1;
    if (back >= grid_size) back = 0;
    mark(obs, channels, i + 1, back, static_cast<std::size_t>(1 + std::abs(c.velocity)));
  }
}

}  // namespace coral::envs::minatar
