#include "coral/envs/bandit.hpp"

namespace coral::envs {

std::vector<config_key> bandit::config_keys() {
  return {{.name = "arms", .type = config_type::integer, .default_value = "4", .description = "number of arms",
           .min = 2, .max = 1 << 20},
          {.name = "solution_seed",
           .type = config_type::integer,
           .default_value = "42",
           .description = "picks the paying arm (the same for every env and run seed)",
           .min = 0}};
}

bandit::bandit(const env_config& config, env_seed /*seed*/)
    : observation_space_(space::box({1}, 1.0F, 1.0F)),
      action_space_(space::discrete(static_cast<std::int32_t>(config.get_int("arms")))) {
  rng fixed(static_cast<std::uint64_t>(config.get_int("solution_seed")));
  solution_arm_ = static_cast<std::int32_t>(fixed.below(static_cast<std::uint64_t>(config.get_int("arms"))));
}

void bandit::reset(const env_rows& rows) { rows.observation()[0] = 1.0F; }

void bandit::step(const env_rows& rows) {
  rows.observation()[0] = 1.0F;
  rows.reward() = rows.action() == solution_arm_ ? 1.0F : 0.0F;
  rows.terminated() = 1;
  rows.truncated() = 0;
}

}  // namespace coral::envs
