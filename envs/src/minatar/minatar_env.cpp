#include "coral/envs/minatar.hpp"

#include <algorithm>
#include <array>

#include "../canvas.hpp"

#include "coral/envs/minatar_asterix.hpp"
#include "coral/envs/minatar_breakout.hpp"
#include "coral/envs/minatar_freeway.hpp"
#include "coral/envs/minatar_seaquest.hpp"
#include "coral/envs/minatar_space_invaders.hpp"

namespace coral::envs {

namespace minatar {

std::vector<config_key> common_keys() {
  return {{.name = "sticky_action_prob",
           .type = config_type::real,
           .default_value = "0.1",
           .description = "probability that a step repeats the previous action instead of the chosen one",
           .min = 0.0,
           .max = 1.0},
          {.name = "minimal_actions",
           .type = config_type::boolean,
           .default_value = "false",
           .description = "act with the game's minimal action set (false: MinAtar's full set of 6)"}};
}

config_key ramping_key() {
  return {.name = "ramping",
          .type = config_type::boolean,
          .default_value = "true",
          .description = "ramp the difficulty up as the game goes on (MinAtar's difficulty_ramping)"};
}

}  // namespace minatar

template <class Game>
std::vector<config_key> minatar_env<Game>::config_keys() {
  auto keys = minatar::common_keys();
  for (auto& k : Game::game_keys()) keys.push_back(std::move(k));
  return keys;
}

template <class Game>
minatar_env<Game>::minatar_env(const env_config& config, env_seed seed)
    : game_(config),
      observation_space_(space::box({minatar::grid_size, minatar::grid_size, Game::channels}, 0.0F, 1.0F)),
      action_space_(space::discrete(config.get_bool("minimal_actions")
                                        ? static_cast<std::int32_t>(Game::minimal_actions.size())
                                        : minatar::full_action_count)),
      rng_(seed),
      sticky_action_prob_(config.get_float("sticky_action_prob")),
      minimal_actions_(config.get_bool("minimal_actions")) {}

template <class Game>
void minatar_env<Game>::write_observation(const env_rows& rows) const noexcept {
  const std::span<float> obs = rows.observation();
  std::fill(obs.begin(), obs.end(), 0.0F);
  game_.draw(obs.data());
}

template <class Game>
void minatar_env<Game>::reset(const env_rows& rows) {
  game_.reset(rng_);
  write_observation(rows);
}

template <class Game>
void minatar_env<Game>::step(const env_rows& rows) {
  const std::int32_t chosen = rows.action();
  // An action outside the space (the batcher never writes one) acts as the no-op.
  minatar::action a = minatar::action::noop;
  if (minimal_actions_) {
    if (chosen >= 0 && static_cast<std::size_t>(chosen) < Game::minimal_actions.size()) {
      a = Game::minimal_actions[static_cast<std::size_t>(chosen)];
    }
  } else if (chosen >= 0 && chosen < minatar::full_action_count) {
    a = static_cast<minatar::action>(chosen);
  }
  if (sticky_action_prob_ > 0.0 && rng_.uniform() < sticky_action_prob_) a = last_action_;
  last_action_ = a;
  const minatar::step_result result = game_.step(a, rng_);
  write_observation(rows);
  rows.reward() = result.reward;
  rows.terminated() = static_cast<std::uint8_t>(result.terminated);
  rows.truncated() = static_cast<std::uint8_t>(result.truncated);
}

template <class Game>
bool minatar_env<Game>::render(rgb_frame& frame) const {
  static_assert(Game::channels <= minatar::channel_colours.size());
  constexpr std::size_t cells = minatar::grid_size;
  constexpr auto cell = static_cast<double>(minatar::cell_pixels);
  std::array<float, cells * cells * Game::channels> grid{};
  game_.draw(grid.data());
  frame.resize(cells * minatar::cell_pixels, cells * minatar::cell_pixels);
  for (std::size_t y = 0; y < cells; ++y) {
    for (std::size_t x = 0; x < cells; ++x) {
      canvas::rgb colour{0, 0, 0};
      for (std::size_t c = 0; c < Game::channels; ++c) {
        if (grid[(y * cells + x) * Game::channels + c] == 0.0F) continue;
        const std::uint32_t hex = minatar::channel_colours[c];
        colour = {static_cast<std::uint8_t>(hex >> 16), static_cast<std::uint8_t>(hex >> 8),
                  static_cast<std::uint8_t>(hex)};
      }
      const double x0 = static_cast<double>(x) * cell, y0 = static_cast<double>(y) * cell;
      canvas::fill_rect(frame, x0, y0, x0 + cell, y0 + cell, colour);
    }
  }
  return true;
}

template class minatar_env<minatar::asterix>;
template class minatar_env<minatar::breakout>;
template class minatar_env<minatar::freeway>;
template class minatar_env<minatar::seaquest>;
template class minatar_env<minatar::space_invaders>;

}  // namespace coral::envs
