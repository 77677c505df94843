#include "coral/envs/repeat_first.hpp"

#include "cards.hpp"

namespace coral::envs {

std::vector<config_key> repeat_first::config_keys() { return {detail::suits_key(), detail::card_length_key()}; }

repeat_first::repeat_first(const env_config& config, env_seed seed)
    : observation_space_(detail::card_observation_space(config.get_int("suits"))),
      action_space_(space::discrete(static_cast<std::int32_t>(config.get_int("suits")))),
      rng_(seed),
      suits_(config.get_int("suits")),
      length_(config.get_int("length")) {}

void repeat_first::reset(const env_rows& rows) {
  first_ = static_cast<std::int32_t>(rng_.below(static_cast<std::uint64_t>(suits_)));
  t_ = 0;
  detail::write_card(rows.observation(), first_, true);
}

void repeat_first::step(const env_rows& rows) {
  rows.reward() = t_ == 0 ? 0.0F : detail::answer_reward(rows.action() == first_, length_ - 1);
  ++t_;
  const bool over = t_ == length_;
  const auto card = over ? -1 : static_cast<std::int32_t>(rng_.below(static_cast<std::uint64_t>(suits_)));
  detail::write_card(rows.observation(), card, false);
  rows.terminated() = static_cast<std::uint8_t>(over);
  rows.truncated() = 0;
}

}  // namespace coral::envs
