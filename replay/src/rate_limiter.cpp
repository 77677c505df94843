#include "coral/replay/rate_limiter.hpp"

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/errors.hpp"

namespace coral::replay {

rate_limiter::rate_limiter(const rate_limiter_config& config) : config_(config) {
  if (!(config.samples_per_insert > 0.0)) {
    throw config_error(fmt::format(fmt::runtime(errors::bad_ratio), config.samples_per_insert));
  }
  const double needed = (config.samples_per_insert + 1.0) / 2.0;
  if (!(config.error_buffer >= needed)) {
    throw config_error(fmt::format(fmt::runtime(errors::small_error_buffer), config.error_buffer, needed));
  }
  const double offset = config.samples_per_insert * static_cast<double>(config.min_size_to_sample);
  min_diff_ = offset - config.error_buffer;
  max_diff_ = offset + config.error_buffer;
}

double rate_limiter::diff() const noexcept {
  return static_cast<double>(inserts_) * config_.samples_per_insert - static_cast<double>(samples_);
}

bool rate_limiter::can_insert(std::uint64_t n) const noexcept {
  if (inserts_ + n <= config_.min_size_to_sample) return true;
  return diff() + static_cast<double>(n) * config_.samples_per_insert <= max_diff_;
}

bool rate_limiter::can_sample(std::uint64_t n) const noexcept {
  if (inserts_ < config_.min_size_to_sample) return false;
  return diff() - static_cast<double>(n) >= min_diff_;
}

}  // namespace coral::replay
