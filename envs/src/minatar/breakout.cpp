#include "coral/envs/minatar_breakout.hpp"

namespace coral::envs::minatar {

namespace {
bool brick_at(const breakout::state& s, int x, int y) noexcept { return ((s.bricks[y] >> x) & 1U) != 0; }
}  // namespace

breakout::breakout(const env_config& /*config*/) {}

void breakout::fill_bricks(state& s) noexcept {
  for (int y = 1; y <= 3; ++y) s.bricks[y] = full_row;
}

void breakout::reset(rng& r) noexcept {
  state_ = state{};
  const bool from_right = r.below(2) == 1;
  state_.ball_x = from_right ? grid_size - 1 : 0;
  state_.ball_dx = from_right ? -1 : 1;
  state_.ball_dy = 1;
  state_.ball_y = 3;
  state_.last_x = state_.ball_x;
  state_.last_y = state_.ball_y;
  fill_bricks(state_);
}

step_result breakout::step(action a, rng& /*r*/) noexcept {
  state& s = state_;
  step_result out;
  if (a == action::left) s.paddle = s.paddle > 0 ? s.paddle - 1 : 0;
  if (a == action::right) s.paddle = s.paddle < grid_size - 1 ? s.paddle + 1 : grid_size - 1;

  s.last_x = s.ball_x;
  s.last_y = s.ball_y;
  int x = s.ball_x + s.ball_dx;
  int y = s.ball_y + s.ball_dy;
  bool hit_brick = false;
  if (x < 0 || x >= grid_size) {
    x = x < 0 ? 0 : grid_size - 1;
    s.ball_dx = -s.ball_dx;
  }
  if (y < 0) {
    y = 0;
    s.ball_dy = -s.ball_dy;
  } else if (brick_at(s, x, y)) {
    hit_brick = true;
    // Two bricks in a row: the second is passed through, not broken.
    if (!s.struck) {
      out.reward = 1.0F;
      s.struck = true;
      s.bricks[y] = static_cast<std::uint16_t>(s.bricks[y] & ~(1U << x));
      y = s.last_y;
      s.ball_dy = -s.ball_dy;
    }
  } else if (y == grid_size - 1) {
    bool any = false;
    for (auto row : s.bricks) any = any || row != 0;
    if (!any) fill_bricks(s);
    if (s.ball_x == s.paddle) {
      s.ball_dy = -s.ball_dy;
      y = s.last_y;
    } else if (x == s.paddle) {
      s.ball_dx = -s.ball_dx;
      s.ball_dy = -s.ball_dy;
      y = s.last_y;
    } else {
      out.terminated = true;
    }
  }
  if (!hit_brick) s.struck = false;
  s.ball_x = x;
  s.ball_y = y;
  return out;
}

void breakout::draw(float* obs) const noexcept {
  const state& s = state_;
  mark(obs, channels, grid_size - 1, s.paddle, 0);
  mark(obs, channels, s.ball_y, s.ball_x, 1);
  mark(obs, channels, s.last_y, s.last_x, 2);
  for (int y = 0; y < grid_size; ++y) {
    for (int x = 0; x < grid_size; ++x) {
      if (brick_at(s, x, y)) mark(obs, channels, y, x, 3);
    }
  }
}

}  // namespace coral::envs::minatar
