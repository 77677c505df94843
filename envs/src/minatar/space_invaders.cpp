#include "coral/envs/minatar_space_invaders.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>

namespace coral::envs::minatar {

namespace {

bool at(const space_invaders::layer& l, int y, int x) noexcept { return ((l[y] >> x) & 1U) != 0; }

int count(const space_invaders::layer& l) noexcept {
  int n = 0;
  for (auto row : l) n += std::popcount(row);
  return n;
}

bool column_occupied(const space_invaders::layer& l, int x) noexcept {
  for (auto row : l) {
    if (((row >> x) & 1U) != 0) return true;
  }
  return false;
}

}  // namespace

space_invaders::space_invaders(const env_config& config) : ramping_(config.get_bool("ramping")) {}

space_invaders::layer space_invaders::new_wave() noexcept {
  layer l{};
  constexpr auto columns_2_to_7 = static_cast<std::uint16_t>(0b0011111100U);
  for (int y = 0; y < 4; ++y) l[y] = columns_2_to_7;
  return l;
}

void space_invaders::reset(rng& /*r*/) noexcept {
  state_ = state{};
  state_.aliens = new_wave();
}

step_result space_invaders::step(action a, rng& /*r*/) noexcept {
  state& s = state_;
  step_result out;
  constexpr int bottom = grid_size - 1;
  if (a == action::fire && s.shot_cooldown == 0) {
    s.bullets[bottom] = static_cast<std::uint16_t>(s.bullets[bottom] | (1U << s.cannon));
    s.shot_cooldown = shot_cooldown;
  } else if (a == action::left) {
    s.cannon = s.cannon > 0 ? s.cannon - 1 : 0;
  } else if (a == action::right) {
    s.cannon = s.cannon < bottom ? s.cannon + 1 : bottom;
  }

  for (int y = 0; y < bottom; ++y) s.bullets[y] = s.bullets[y + 1];
  s.bullets[bottom] = 0;
  for (int y = bottom; y > 0; --y) s.alien_bullets[y] = s.alien_bullets[y - 1];
  s.alien_bullets[0] = 0;

  if (at(s.alien_bullets, bottom, s.cannon) || at(s.aliens, bottom, s.cannon)) out.terminated = true;

  if (s.alien_move_countdown == 0) {
    s.alien_move_countdown = std::min(count(s.aliens), s.alien_move_interval);
    const bool at_edge = s.alien_heading < 0 ? column_occupied(s.aliens, 0) : column_occupied(s.aliens, bottom);
    if (at_edge) {
      s.alien_heading = -s.alien_heading;
      if (s.aliens[bottom] != 0) out.terminated = true;
      const std::uint16_t wrapped = s.aliens[bottom];
      for (int y = bottom; y > 0; --y) s.aliens[y] = s.aliens[y - 1];
      s.aliens[0] = wrapped;
    } else {
      for (auto& row : s.aliens) {
        // One column in the heading; the edge column it moves away from is empty.
        row = static_cast<std::uint16_t>((s.alien_heading < 0 ? row >> 1 : row << 1) & full_row);
      }
    }
    if (at(s.aliens, bottom, s.cannon)) out.terminated = true;
  }

  if (s.alien_shot_countdown == 0) {
    s.alien_shot_countdown = alien_shot_interval;
    // Columns by distance from the cannon, the left one first on a tie.
    for (int d = 0; d < grid_size; ++d) {
      int x = -1;
      if (s.cannon - d >= 0 && column_occupied(s.aliens, s.cannon - d)) {
        x = s.cannon - d;
      } else if (d > 0 && s.cannon + d < grid_size && column_occupied(s.aliens, s.cannon + d)) {
        x = s.cannon + d;
      }
      if (x < 0) continue;
      int y = bottom;
      while (!at(s.aliens, y, x)) --y;
      s.alien_bullets[y] = static_cast<std::uint16_t>(s.alien_bullets[y] | (1U << x));
      break;
    }
  }

  for (int y = 0; y < grid_size; ++y) {
    const auto hits = static_cast<std::uint16_t>(s.aliens[y] & s.bullets[y]);
    out.reward += static_cast<float>(std::popcount(hits));
    s.aliens[y] = static_cast<std::uint16_t>(s.aliens[y] & ~hits);
    s.bullets[y] = static_cast<std::uint16_t>(s.bullets[y] & ~hits);
  }

  if (s.shot_cooldown > 0) --s.shot_cooldown;
  --s.alien_move_countdown;
  --s.alien_shot_countdown;

  if (count(s.aliens) == 0) {
    if (ramping_ && s.alien_move_interval > fastest_move_interval) {
      --s.alien_move_interval;
      ++s.ramps;
    }
    s.aliens = new_wave();
  }
  return out;
}

void space_invaders::draw(float* obs) const noexcept {
  const state& s = state_;
  mark(obs, channels, grid_size - 1, s.cannon, 0);
  const std::size_t heading_channel = s.alien_heading < 0 ? 2 : 3;
  for (int y = 0; y < grid_size; ++y) {
    for (int x = 0; x < grid_size; ++x) {
      if (at(s.aliens, y, x)) {
        mark(obs, channels, y, x, 1);
        mark(obs, channels, y, x, heading_channel);
      }
      if (at(s.bullets, y, x)) mark(obs, channels, y, x, 4);
      if (at(s.alien_bullets, y, x)) mark(obs, channels, y, x, 5);
    }
  }
}

}  // namespace coral::envs::minatar
