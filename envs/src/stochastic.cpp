#include "coral/envs/stochastic.hpp"

#include <algorithm>

namespace coral::envs {

std::vector<config_key> stochastic::config_keys() {
  return {{.name = "p", .type = config_type::real, .default_value = "0.75",
           .description = "optimal probability of action 0", .min = 0.01, .max = 0.99},
          {.name = "horizon", .type = config_type::integer, .default_value = "20",
           .description = "steps per episode", .min = 2, .max = 1 << 20}};
}

stochastic::stochastic(const env_config& config, env_seed /*seed*/)
    : observation_space_(space::box({1}, 1.0F, 1.0F)),
      action_space_(space::discrete(2)),
      p_(config.get_float("p")),
      horizon_(config.get_int("horizon")) {}

void stochastic::reset(const env_rows& rows) {
  t_ = 0;
  sum_ = 0;
  sum_sq_ = 0;
  rows.observation()[0] = 1.0F;
}

void stochastic::step(const env_rows& rows) {
  const double deviation = (rows.action() == 0 ? 1.0 : 0.0) - p_;
  sum_ += deviation;
  sum_sq_ += deviation * deviation;
  ++t_;
  rows.observation()[0] = 1.0F;
  rows.truncated() = 0;
  if (t_ < horizon_) {
    rows.reward() = 0.0F;
    rows.terminated() = 0;
    return;
  }
  const double h = static_cast<double>(horizon_);
  const double m = std::max(p_, 1.0 - p_);
  rows.reward() = static_cast<float>(1.0 - (sum_ * sum_ - sum_sq_) / (h * (h - 1.0) * m * m));
  rows.terminated() = 1;
}

}  // namespace coral::envs
