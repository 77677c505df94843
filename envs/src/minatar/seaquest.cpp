#include "coral/envs/minatar_seaquest.hpp"

#include <algorithm>

namespace coral::envs::minatar {

namespace {

// Moves x one cell in its heading; true if it is still on the grid.
template <class T>
bool advance(T& o) noexcept {
  o.x += o.heading_right ? 1 : -1;
  return o.x >= 0 && o.x < grid_size;
}

template <class T>
void erase_at(std::vector<T>& v, std::size_t i) {
  v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
}

// Removes the oldest of `bullets` on (x, y); true if there was one.
bool take_bullet_at(std::vector<seaquest::bullet>& bullets, int x, int y) {
  for (std::size_t j = 0; j < bullets.size(); ++j) {
    if (bullets[j].x == x && bullets[j].y == y) {
      erase_at(bullets, j);
      return true;
    }
  }
  return false;
}

// Removes the oldest of `swimmers` on (x, y); true if there was one.
bool take_swimmer_at(std::vector<seaquest::swimmer>& swimmers, int x, int y) {
  for (std::size_t j = 0; j < swimmers.size(); ++j) {
    if (swimmers[j].x == x && swimmers[j].y == y) {
      erase_at(swimmers, j);
      return true;
    }
  }
  return false;
}

}  // namespace

seaquest::seaquest(const env_config& config) : ramping_(config.get_bool("ramping")) {
  state_.bullets.reserve(reserved_objects);
  state_.enemy_bullets.reserve(reserved_objects);
  state_.fish.reserve(reserved_objects);
  state_.subs.reserve(reserved_objects);
  state_.divers.reserve(reserved_objects);
}

void seaquest::reset(rng& /*r*/) noexcept {
  // A fresh state that keeps the lists' storage: no allocation per episode.
  state fresh;
  fresh.bullets.swap(state_.bullets);
  fresh.enemy_bullets.swap(state_.enemy_bullets);
  fresh.fish.swap(state_.fish);
  fresh.subs.swap(state_.subs);
  fresh.divers.swap(state_.divers);
  fresh.bullets.clear();
  fresh.enemy_bullets.clear();
  fresh.fish.clear();
  fresh.subs.clear();
  fresh.divers.clear();
  state_ = std::move(fresh);
}

void seaquest::spawn_enemy(rng& r) {
  const bool heading_right = r.uniform() < 0.5;
  const bool is_sub = r.uniform() < 1.0 / 3.0;
  const int x = heading_right ? 0 : grid_size - 1;
  const int y = 1 + static_cast<int>(r.below(8));
  const auto against = [&](const swimmer& e) { return e.y == y && e.heading_right != heading_right; };
  if (std::any_of(state_.subs.begin(), state_.subs.end(), against) ||
      std::any_of(state_.fish.begin(), state_.fish.end(), against)) {
    return;
  }
  const swimmer e{.x = x, .y = y, .heading_right = heading_right, .move_countdown = state_.move_interval,
                  .shot_countdown = enemy_shot_interval};
  (is_sub ? state_.subs : state_.fish).push_back(e);
}

void seaquest::spawn_diver(rng& r) {
  const bool heading_right = r.uniform() < 0.5;
  const int y = 1 + static_cast<int>(r.below(8));
  state_.divers.push_back(swimmer{.x = heading_right ? 0 : grid_size - 1, .y = y, .heading_right = heading_right,
                                  .move_countdown = diver_move_interval});
}

float seaquest::surface() noexcept {
  state& s = state_;
  s.surfaced = true;
  float reward = 0.0F;
  if (s.divers_aboard == max_divers) {
    s.divers_aboard = 0;
    reward = static_cast<float>(s.oxygen * 10 / max_oxygen);
  }
  s.oxygen = max_oxygen;
  --s.divers_aboard;
  if (ramping_ && (s.enemy_spawn_interval > 1 || s.move_interval > 2)) {
    if (s.move_interval > 2 && s.ramps % 2 == 1) --s.move_interval;
    if (s.enemy_spawn_interval > 1) --s.enemy_spawn_interval;
    ++s.ramps;
  }
  return reward;
}

step_result seaquest::step(action a, rng& r) {
  state& s = state_;
  step_result out;
  if (s.enemy_spawn_countdown == 0) {
    spawn_enemy(r);
    s.enemy_spawn_countdown = s.enemy_spawn_interval;
  }
  if (s.diver_spawn_countdown == 0) {
    spawn_diver(r);
    s.diver_spawn_countdown = diver_spawn_interval;
  }

  if (a == action::fire && s.shot_cooldown == 0) {
    s.bullets.push_back(bullet{.x = s.sub_x, .y = s.sub_y, .heading_right = s.sub_heading_right});
    s.shot_cooldown = shot_cooldown;
  } else if (a == action::left) {
    s.sub_x = std::max(0, s.sub_x - 1);
    s.sub_heading_right = false;
  } else if (a == action::right) {
    s.sub_x = std::min(grid_size - 1, s.sub_x + 1);
    s.sub_heading_right = true;
  } else if (a == action::up) {
    s.sub_y = std::max(0, s.sub_y - 1);
  } else if (a == action::down) {
    s.sub_y = std::min(grid_size - 2, s.sub_y + 1);
  }

  for (std::size_t i = s.bullets.size(); i-- > 0;) {
    bullet& b = s.bullets[i];
    if (!advance(b)) {
      erase_at(s.bullets, i);
    } else if (take_swimmer_at(s.fish, b.x, b.y) || take_swimmer_at(s.subs, b.x, b.y)) {
      erase_at(s.bullets, i);
      out.reward += 1.0F;
    }
  }

  for (std::size_t i = s.divers.size(); i-- > 0;) {
    swimmer& d = s.divers[i];
    if (on_sub(d.x, d.y) && s.divers_aboard < max_divers) {
      erase_at(s.divers, i);
      ++s.divers_aboard;
    } else if (d.move_countdown == 0) {
      d.move_countdown = diver_move_interval;
      if (!advance(d)) {
        erase_at(s.divers, i);
      } else if (on_sub(d.x, d.y) && s.divers_aboard < max_divers) {
        erase_at(s.divers, i);
        ++s.divers_aboard;
      }
    } else {
      --d.move_countdown;
    }
  }

  for (std::size_t i = s.subs.size(); i-- > 0;) {
    swimmer e = s.subs[i];  // a copy: a sub that leaves or sinks still fires this step
    bool gone = false;
    if (on_sub(e.x, e.y)) out.terminated = true;
    if (e.move_countdown == 0) {
      e.move_countdown = s.move_interval;
      if (!advance(e)) {
        gone = true;
      } else if (on_sub(e.x, e.y)) {
        out.terminated = true;
      } else if (take_bullet_at(s.bullets, e.x, e.y)) {
        gone = true;
        out.reward += 1.0F;
      }
    } else {
      --e.move_countdown;
    }
    if (e.shot_countdown == 0) {
      e.shot_countdown = enemy_shot_interval;
      s.enemy_bullets.push_back(bullet{.x = e.x, .y = e.y, .heading_right = e.heading_right});
    } else {
      --e.shot_countdown;
    }
    if (gone) {
      erase_at(s.subs, i);
    } else {
      s.subs[i] = e;
    }
  }

  for (std::size_t i = s.enemy_bullets.size(); i-- > 0;) {
    bullet& b = s.enemy_bullets[i];
    if (on_sub(b.x, b.y)) out.terminated = true;
    if (!advance(b)) {
      erase_at(s.enemy_bullets, i);
    } else if (on_sub(b.x, b.y)) {
      out.terminated = true;
    }
  }

  for (std::size_t i = s.fish.size(); i-- > 0;) {
    swimmer& f = s.fish[i];
    if (on_sub(f.x, f.y)) out.terminated = true;
    if (f.move_countdown == 0) {
      f.move_countdown = s.move_interval;
      if (!advance(f)) {
        erase_at(s.fish, i);
      } else if (on_sub(f.x, f.y)) {
        out.terminated = true;
      } else if (take_bullet_at(s.bullets, f.x, f.y)) {
        erase_at(s.fish, i);
        out.reward += 1.0F;
      }
    } else {
      --f.move_countdown;
    }
  }

  if (s.enemy_spawn_countdown > 0) --s.enemy_spawn_countdown;
  if (s.diver_spawn_countdown > 0) --s.diver_spawn_countdown;
  if (s.shot_cooldown > 0) --s.shot_cooldown;

  if (s.oxygen <= 0) out.terminated = true;
  if (s.sub_y > 0) {
    --s.oxygen;
    s.surfaced = false;
  } else if (!s.surfaced) {
    if (s.divers_aboard == 0) {
      out.terminated = true;
    } else {
      out.reward += surface();
    }
  }
  return out;
}

void seaquest::draw(float* obs) const noexcept {
  const state& s = state_;
  mark(obs, channels, s.sub_y, s.sub_x, 0);
  mark(obs, channels, s.sub_y, s.sub_heading_right ? s.sub_x - 1 : s.sub_x + 1, 1);
  const int oxygen_cells = std::max(0, s.oxygen) * 10 / max_oxygen;
  for (int x = 0; x < oxygen_cells; ++x) mark(obs, channels, grid_size - 1, x, 7);
  for (int x = grid_size - 1 - s.divers_aboard; x < grid_size - 1; ++x) mark(obs, channels, grid_size - 1, x, 8);
  for (const bullet& b : s.bullets) mark(obs, channels, b.y, b.x, 2);
  for (const bullet& b : s.enemy_bullets) mark(obs, channels, b.y, b.x, 4);
  const auto draw_swimmer = [&](const swimmer& o, std::size_t c) {
    mark(obs, channels, o.y, o.x, c);
    mark(obs, channels, o.y, o.heading_right ? o.x - 1 : o.x + 1, 3);
  };
  for (const swimmer& f : s.fish) draw_swimmer(f, 5);
  for (const swimmer& e : s.subs) draw_swimmer(e, 6);
  for (const swimmer& d : s.divers) draw_swimmer(d, 9);
}

}  // namespace coral::envs::minatar
