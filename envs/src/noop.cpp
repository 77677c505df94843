#include "coral/envs/noop.hpp"

#include <limits>

namespace coral::envs {

std::vector<config_key> noop::config_keys() {
  return {{.name = "episode_length", .type = config_type::integer, .default_value = "1000",
           .description = "steps after which an episode is truncated", .min = 1}};
}

noop::noop(const env_config& config, env_seed /*seed*/)
    : observation_space_(space::box({4}, -std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::infinity())),
      action_space_(space::discrete(2)),
      episode_length_(config.get_int("episode_length")) {}

void noop::reset(const env_rows& rows) {
  steps_ = 0;
  float* obs = rows.observation().data();
  obs[0] = obs[1] = obs[2] = obs[3] = 0.0F;
}

void noop::step(const env_rows& rows) {
  ++steps_;
  float* obs = rows.observation().data();
  obs[0] = static_cast<float>(steps_);
  obs[1] = obs[2] = obs[3] = 0.0F;
  rows.reward() = 0.0F;
  rows.terminated() = 0;
  rows.truncated() = static_cast<std::uint8_t>(steps_ >= episode_length_);
}

}  // namespace coral::envs
