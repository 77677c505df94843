#include "coral/envs/repeat_previous.hpp"

#include "cards.hpp"

namespace coral::envs {

std::vector<config_key> repeat_previous::config_keys() {
  return {detail::suits_key(), detail::card_length_key(),
          {.name = "k", .type = config_type::integer, .default_value = "4",
           .description = "how many steps back the card to name was shown (less than length)", .min = 1,
           .max = static_cast<double>(detail::max_card_episode - 1)}};
}

repeat_previous::repeat_previous(const env_config& config, env_seed seed)
    : observation_space_(detail::card_observation_space(config.get_int("suits"))),
      action_space_(space::discrete(static_cast<std::int32_t>(config.get_int("suits")))),
      rng_(seed),
      suits_(config.get_int("suits")),
      length_(config.get_int("length")),
      k_(config.get_int("k")) {
  if (k_ >= length_) config.reject("k", "must be less than length");
  recent_.assign(static_cast<std::size_t>(k_ + 1), 0);
}

void repeat_previous::reset(const env_rows& rows) {
  t_ = 0;
  recent_[0] = static_cast<std::int32_t>(rng_.below(static_cast<std::uint64_t>(suits_)));
  detail::write_card(rows.observation(), recent_[0], true);
}

void repeat_previous::step(const env_rows& rows) {
  const std::int32_t expected = answer();
  rows.reward() = expected < 0 ? 0.0F : detail::answer_reward(rows.action() == expected, length_ - k_);
  ++t_;
  const bool over = t_ == length_;
  std::int32_t card = -1;
  if (!over) {
    card = static_cast<std::int32_t>(rng_.below(static_cast<std::uint64_t>(suits_)));
    recent_[static_cast<std::size_t>(t_ % (k_ + 1))] = card;
  }
  detail::write_card(rows.observation(), card, false);
  rows.terminated() = static_cast<std::uint8_t>(over);
  rows.truncated() = 0;
}

}  // namespace coral::envs
