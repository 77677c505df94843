#include "coral/envs/race.hpp"

#include <algorithm>
#include <numeric>

namespace coral::envs {

std::vector<config_key> race::config_keys() {
  return {{.name = "agents", .type = config_type::integer, .default_value = "4",
           .description = "agent slots (max agents, rows per env)", .min = 1, .max = 1024},
          {.name = "min_agents", .type = config_type::integer, .default_value = "2",
           .description = "fewest agents taking part in an episode", .min = 1, .max = 1024},
          {.name = "length", .type = config_type::integer, .default_value = "8",
           .description = "cells to the finish", .min = 1, .max = 1 << 20},
          {.name = "max_steps", .type = config_type::integer, .default_value = "32",
           .description = "steps after which running agents are truncated", .min = 1}};
}

race::race(const env_config& config, env_seed seed)
    : observation_space_(space::box({2}, -1.0F, 1.0F)),
      action_space_(space::discrete(2)),
      rng_(seed),
      min_agents_(config.get_int("min_agents")),
      length_(config.get_int("length")),
      max_steps_(config.get_int("max_steps")) {
  const auto agents = static_cast<std::size_t>(config.get_int("agents"));
  if (min_agents_ > static_cast<std::int64_t>(agents)) config.reject("min_agents", "must be at most agents");
  positions_.resize(agents);
  running_.resize(agents);
  slots_.resize(agents);
}

void race::write_observation(const env_rows& rows, std::size_t slot) const noexcept {
  float* obs = rows.observation(slot).data();
  if (running_[slot] == 0) {
    obs[0] = 0.0F;
    obs[1] = 0.0F;
    return;
  }
  obs[0] = static_cast<float>(positions_[slot]) / static_cast<float>(length_);
  obs[1] = slot % 2 == 0 ? 1.0F : -1.0F;
}

void race::reset(const env_rows& rows) {
  const std::size_t agents = positions_.size();
  const auto k = static_cast<std::size_t>(min_agents_) +
                 static_cast<std::size_t>(rng_.below(agents - static_cast<std::size_t>(min_agents_) + 1));
  // A partial Fisher–Yates shuffle picks k distinct slots.
  std::iota(slots_.begin(), slots_.end(), 0U);
  for (std::size_t i = 0; i < k; ++i) std::swap(slots_[i], slots_[i + rng_.below(agents - i)]);
  std::fill(running_.begin(), running_.end(), std::uint8_t{0});
  for (std::size_t i = 0; i < k; ++i) running_[slots_[i]] = 1;
  std::fill(positions_.begin(), positions_.end(), 0);
  steps_ = 0;
  for (std::size_t slot = 0; slot < agents; ++slot) {
    rows.active(slot) = running_[slot];
    write_observation(rows, slot);
  }
}

void race::step(const env_rows& rows) {
  ++steps_;
  const bool out_of_time = steps_ >= max_steps_;
  for (std::size_t slot = 0; slot < positions_.size(); ++slot) {
    if (running_[slot] == 0) continue;
    if (rows.action(slot) == advancing_action(slot)) ++positions_[slot];
    const bool finished = positions_[slot] >= length_;
    rows.reward(slot) = finished ? 1.0F : 0.0F;
    rows.terminated(slot) = static_cast<std::uint8_t>(finished);
    rows.truncated(slot) = static_cast<std::uint8_t>(!finished && out_of_time);
    write_observation(rows, slot);  // the final observation, while the slot still counts as running
    if (finished || out_of_time) running_[slot] = 0;
    rows.active(slot) = running_[slot];
  }
}

}  // namespace coral::envs
