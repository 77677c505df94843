#include "coral/envs/password.hpp"

#include <algorithm>

namespace coral::envs {

std::vector<config_key> password::config_keys() {
  return {{.name = "length", .type = config_type::integer, .default_value = "5",
           .description = "bits in the password", .min = 1, .max = 63},
          {.name = "password_seed", .type = config_type::integer, .default_value = "42",
           .description = "picks the password (the same for every env and run seed)", .min = 0}};
}

password::password(const env_config& config, env_seed /*seed*/)
    : observation_space_(space::box({static_cast<std::size_t>(config.get_int("length"))}, -1.0F, 1.0F)),
      action_space_(space::discrete(2)),
      length_(config.get_int("length")) {
  rng fixed(static_cast<std::uint64_t>(config.get_int("password_seed")));
  password_ = fixed();
}

void password::write_observation(const env_rows& rows) const noexcept {
  // The whole row is written every time: an env must not rely on what the batch held before.
  const auto obs = rows.observation();
  for (std::int64_t i = 0; i < length_; ++i) {
    const auto u = static_cast<std::size_t>(i);
    obs[u] = i >= t_ ? 0.0F : ((guesses_ >> u) & 1U) != 0 ? 1.0F : -1.0F;
  }
}

void password::reset(const env_rows& rows) {
  t_ = 0;
  guesses_ = 0;
  correct_ = true;
  write_observation(rows);
}

void password::step(const env_rows& rows) {
  const int guess = rows.action() != 0 ? 1 : 0;
  correct_ = correct_ && guess == bit(static_cast<std::size_t>(t_));
  guesses_ |= static_cast<std::uint64_t>(guess) << t_;
  ++t_;
  write_observation(rows);
  const bool done = t_ == length_;
  rows.reward() = done && correct_ ? 1.0F : 0.0F;
  rows.terminated() = static_cast<std::uint8_t>(done);
  rows.truncated() = 0;
}

}  // namespace coral::envs
