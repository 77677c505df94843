#include "coral/envs/memory.hpp"

namespace coral::envs {

std::vector<config_key> memory::config_keys() {
  return {{.name = "length", .type = config_type::integer, .default_value = "2",
           .description = "bits to remember", .min = 1, .max = 64},
          {.name = "delay", .type = config_type::integer, .default_value = "2",
           .description = "blank steps between showing and reciting", .min = 0, .max = 1 << 20}};
}

memory::memory(const env_config& config, env_seed seed)
    : observation_space_(space::box({2}, -1.0F, 1.0F)),
      action_space_(space::discrete(2)),
      rng_(seed),
      length_(config.get_int("length")),
      delay_(config.get_int("delay")) {}

void memory::write_observation(const env_rows& rows) const noexcept {
  float* obs = rows.observation().data();
  if (t_ < length_) {
    obs[0] = bit(static_cast<std::size_t>(t_)) != 0 ? 1.0F : -1.0F;
    obs[1] = 0.0F;
  } else if (t_ < length_ + delay_) {
    obs[0] = 0.0F;
    obs[1] = 0.0F;
  } else {
    obs[0] = 0.0F;
    obs[1] = 1.0F;
  }
}

void memory::reset(const env_rows& rows) {
  bits_ = rng_();
  t_ = 0;
  write_observation(rows);
}

void memory::step(const env_rows& rows) {
  const std::int64_t recite = t_ - length_ - delay_;
  float reward = 0.0F;
  if (recite >= 0 && rows.action() == bit(static_cast<std::size_t>(recite))) {
    reward = 1.0F / static_cast<float>(length_);
  }
  ++t_;
  write_observation(rows);
  rows.reward() = reward;
  rows.terminated() = static_cast<std::uint8_t>(t_ == 2 * length_ + delay_);
  rows.truncated() = 0;
}

}  // namespace coral::envs
