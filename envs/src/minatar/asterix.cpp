#include "coral/envs/minatar_asterix.hpp"

namespace coral::envs::minatar {

asterix::asterix(const env_config& config) : ramping_(config.get_bool("ramping")) {}

void asterix::reset(rng& /*r*/) noexcept { state_ = state{}; }

void asterix::spawn(rng& r) noexcept {
  const bool heading_right = r.uniform() < 0.5;
  const bool gold = r.uniform() < 1.0 / 3.0;
  std::array<int, lanes> free{};
  int free_count = 0;
  for (int i = 0; i < lanes; ++i) {
    if (!state_.lane[i].present) free[free_count++] = i;
  }
  if (free_count == 0) return;
  object& o = state_.lane[free[r.below(static_cast<std::uint64_t>(free_count))]];
  o = object{.present = true, .x = heading_right ? 0 : grid_size - 1, .heading_right = heading_right, .gold = gold};
}

void asterix::meet(object& o, step_result& out) const noexcept {
  if (o.gold) {
    o.present = false;
    out.reward += 1.0F;
  } else {
    out.terminated = true;
  }
}

step_result asterix::step(action a, rng& r) noexcept {
  state& s = state_;
  step_result out;
  if (s.spawn_countdown == 0) {
    spawn(r);
    s.spawn_countdown = s.spawn_interval;
  }
  switch (a) {
    case action::left: s.player_x = s.player_x > 0 ? s.player_x - 1 : 0; break;
    case action::right: s.player_x = s.player_x < grid_size - 1 ? s.player_x + 1 : grid_size - 1; break;
    case action::up: s.player_y = s.player_y > 1 ? s.player_y - 1 : 1; break;
    case action::down: s.player_y = s.player_y < lanes ? s.player_y + 1 : lanes; break;
    default: break;
  }
  for (int i = 0; i < lanes; ++i) {
    object& o = s.lane[i];
    if (o.present && o.x == s.player_x && i + 1 == s.player_y) meet(o, out);
  }
  if (s.move_countdown == 0) {
    s.move_countdown = s.move_interval;
    for (int i = 0; i < lanes; ++i) {
      object& o = s.lane[i];
      if (!o.present) continue;
      o.x += o.heading_right ? 1 : -1;
      if (o.x < 0 || o.x >= grid_size) {
        o.present = false;
      } else if (o.x == s.player_x && i + 1 == s.player_y) {
        meet(o, out);
      }
    }
  }
  --s.spawn_countdown;
  --s.move_countdown;
  if (ramping_ && (s.spawn_interval > 1 || s.move_interval > 1)) {
    if (s.ramp_countdown >= 0) {
      --s.ramp_countdown;
    } else {
      if (s.move_interval > 1 && s.ramps % 2 == 1) --s.move_interval;
      if (s.spawn_interval > 1) --s.spawn_interval;
      ++s.ramps;
      s.ramp_countdown = ramp_interval;
    }
  }
  return out;
}

void asterix::draw(float* obs) const noexcept {
  const state& s = state_;
  mark(obs, channels, s.player_y, s.player_x, 0);
  for (int i = 0; i < lanes; ++i) {
    const object& o = s.lane[i];
    if (!o.present) continue;
    mark(obs, channels, i + 1, o.x, o.gold ? 3 : 1);
    mark(obs, channels, i + 1, o.heading_right ? o.x - 1 : o.x + 1, 2);
  }
}

}  // namespace coral::envs::minatar
