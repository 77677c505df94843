#include "coral/envs/squared.hpp"

#include <algorithm>

namespace coral::envs {

std::vector<config_key> squared::config_keys() {
  return {{.name = "size", .type = config_type::integer, .default_value = "9",
           .description = "side of the square grid, in cells", .min = 3, .max = 1001},
          {.name = "targets", .type = config_type::integer, .default_value = "3",
           .description = "targets per episode, on the edge", .min = 1, .max = 64},
          {.name = "max_steps", .type = config_type::integer, .default_value = "64",
           .description = "steps after which an episode is truncated", .min = 1}};
}

squared::squared(const env_config& config, env_seed seed)
    : observation_space_(space::box({2 + 3 * static_cast<std::size_t>(config.get_int("targets"))}, -1.0F, 1.0F)),
      action_space_(space::discrete(5)),
      rng_(seed),
      size_(static_cast<std::int32_t>(config.get_int("size"))),
      max_steps_(config.get_int("max_steps")) {
  const auto n = static_cast<std::size_t>(config.get_int("targets"));
  if (n > 4 * static_cast<std::size_t>(size_ - 1)) {
    config.reject("targets", "more targets than the edge of the grid has cells (4 * (size - 1))");
  }
  targets_.resize(n);
  hit_.resize(n);
}

void squared::write_observation(const env_rows& rows) const noexcept {
  const auto span = static_cast<float>(size_ - 1);
  float* obs = rows.observation().data();
  obs[0] = 2.0F * static_cast<float>(agent_.x) / span - 1.0F;
  obs[1] = 2.0F * static_cast<float>(agent_.y) / span - 1.0F;
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    obs[2 + 3 * i] = static_cast<float>(targets_[i].x - agent_.x) / span;
    obs[3 + 3 * i] = static_cast<float>(targets_[i].y - agent_.y) / span;
    obs[4 + 3 * i] = static_cast<float>(hit_[i]);
  }
}

void squared::reset(const env_rows& rows) {
  const std::int32_t side = size_ - 1;
  agent_ = cell{size_ / 2, size_ / 2};
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    cell c;
    do {
      // Walk the edge ring counter-clockwise from (0, 0): bottom, right, top, left side.
      const auto k = static_cast<std::int32_t>(rng_.below(4 * static_cast<std::uint64_t>(side)));
      if (k < side) {
        c = {k, 0};
      } else if (k < 2 * side) {
        c = {side, k - side};
      } else if (k < 3 * side) {
        c = {side - (k - 2 * side), side};
      } else {
        c = {0, side - (k - 3 * side)};
      }
    } while (std::find(targets_.begin(), targets_.begin() + static_cast<std::ptrdiff_t>(i), c) !=
             targets_.begin() + static_cast<std::ptrdiff_t>(i));
    targets_[i] = c;
  }
  std::fill(hit_.begin(), hit_.end(), std::uint8_t{0});
  steps_ = 0;
  hits_ = 0;
  write_observation(rows);
}

void squared::step(const env_rows& rows) {
  switch (rows.action()) {
    case 1:
      agent_.y = std::min(agent_.y + 1, size_ - 1);
      break;
    case 2:
      agent_.y = std::max(agent_.y - 1, 0);
      break;
    case 3:
      agent_.x = std::max(agent_.x - 1, 0);
      break;
    case 4:
      agent_.x = std::min(agent_.x + 1, size_ - 1);
      break;
    default:
      break;
  }
  ++steps_;
  float reward = 0.0F;
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    if (hit_[i] == 0 && targets_[i] == agent_) {
      hit_[i] = 1;
      ++hits_;
      reward += 1.0F / static_cast<float>(targets_.size());
    }
  }
  write_observation(rows);
  rows.reward() = reward;
  rows.terminated() = static_cast<std::uint8_t>(hits_ == static_cast<std::int64_t>(targets_.size()));
  rows.truncated() = static_cast<std::uint8_t>(steps_ >= max_steps_);
}

}  // namespace coral::envs
