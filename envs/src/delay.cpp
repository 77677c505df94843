#include "coral/envs/delay.hpp"

#include <algorithm>
#include <chrono>
#include <limits>

namespace coral::envs {

std::vector<config_key> delay::config_keys() {
  return {{.name = "mean_us", .type = config_type::real, .default_value = "100",
           .description = "mean busy-wait per step, microseconds", .min = 0, .max = 1e7},
          {.name = "std_us", .type = config_type::real, .default_value = "0",
           .description = "standard deviation of the busy-wait, microseconds", .min = 0, .max = 1e7},
          {.name = "episode_length", .type = config_type::integer, .default_value = "1000",
           .description = "steps after which an episode is truncated", .min = 1}};
}

delay::delay(const env_config& config, env_seed seed)
    : observation_space_(space::box({4}, -std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::infinity())),
      action_space_(space::discrete(2)),
      rng_(seed),
      mean_us_(config.get_float("mean_us")),
      std_us_(config.get_float("std_us")),
      episode_length_(config.get_int("episode_length")) {}

double delay::draw_delay_us() noexcept {
  if (std_us_ == 0.0) return mean_us_;
  return std::max(0.0, mean_us_ + std_us_ * rng_.normal());
}

void delay::reset(const env_rows& rows) {
  steps_ = 0;
  float* obs = rows.observation().data();
  obs[0] = obs[1] = obs[2] = obs[3] = 0.0F;
}

void delay::step(const env_rows& rows) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto until = start + std::chrono::duration_cast<clock::duration>(
                                 std::chrono::duration<double, std::micro>(draw_delay_us()));
  while (clock::now() < until) {
    // Busy-wait on purpose: a real simulator keeps its core busy; sleeping would not.
  }
  ++steps_;
  float* obs = rows.observation().data();
  obs[0] = static_cast<float>(steps_);
  obs[1] = obs[2] = obs[3] = 0.0F;
  rows.reward() = 0.0F;
  rows.terminated() = 0;
  rows.truncated() = static_cast<std::uint8_t>(steps_ >= episode_length_);
}

}  // namespace coral::envs
