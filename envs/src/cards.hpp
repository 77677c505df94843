#pragma once
// The parts `repeat_first` and `repeat_previous` share: their config keys,
// their observation (a card's suit, one-hot, and a first-card flag) and the
// reward of one answer.

#include <algorithm>
#include <cstdint>
#include <span>

#include "coral/envs/config.hpp"
#include "coral/envs/space.hpp"

namespace coral::envs::detail {

/// Largest `suits`: the observation is suits + 1 floats wide.
inline constexpr std::int64_t max_suits = 1024;
/// Largest `length` (and so `k`): repeat_previous keeps the last k + 1 suits.
inline constexpr std::int64_t max_card_episode = std::int64_t{1} << 20;

inline config_key suits_key() {
  return {.name = "suits", .type = config_type::integer, .default_value = "4",
          .description = "suits a card is drawn from (the observation is one-hot over them, the action names one)",
          .min = 2, .max = static_cast<double>(max_suits)};
}

inline config_key card_length_key() {
  return {.name = "length", .type = config_type::integer, .default_value = "16",
          .description = "steps (cards shown) per episode", .min = 2,
          .max = static_cast<double>(max_card_episode)};
}

/// Box((suits + 1,), 0, 1).
inline space card_observation_space(std::int64_t suits) {
  return space::box({static_cast<std::size_t>(suits) + 1}, 0.0F, 1.0F);
}

/// Writes a card: one-hot `suit` in the first `suits` elements, then 1 if it
/// is the episode's first card. `suit` < 0 writes no card (all zeros).
inline void write_card(std::span<float> obs, std::int32_t suit, bool first) noexcept {
  std::fill(obs.begin(), obs.end(), 0.0F);
  if (suit >= 0) obs[static_cast<std::size_t>(suit)] = 1.0F;
  obs.back() = first ? 1.0F : 0.0F;
}

/// The reward of a scored answer when `scored` steps of the episode are
/// scored: ±1/scored, so that the return lies in [−1, 1].
inline float answer_reward(bool right, std::int64_t scored) noexcept {
  const float magnitude = 1.0F / static_cast<float>(scored);
  return right ? magnitude : -magnitude;
}

}  // namespace coral::envs::detail
