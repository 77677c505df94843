#include "coral/envs/cover.hpp"

#include <algorithm>
#include <numeric>

namespace coral::envs {
namespace {

space observation_space_for(std::size_t agents) {
  return space::dict({{"position", space::box({1}, 0.0F, 1.0F)},
                      {"slot", space::discrete(static_cast<std::int32_t>(agents))},
                      {"targets", space::box({agents}, 0.0F, 1.0F)},
                      {"others", space::box({agents - 1}, 0.0F, 1.0F)},
                      {"steps_left", space::box({1}, 0.0F, 1.0F)}});
}

}  // namespace

std::vector<config_key> cover::config_keys() {
  return {{.name = "agents", .type = config_type::integer, .default_value = "3",
           .description = "agents and targets", .min = 2, .max = 64},
          {.name = "size", .type = config_type::integer, .default_value = "8",
           .description = "cells of the line", .min = 2, .max = 1024}};
}

cover::cover(const env_config& config, env_seed seed)
    : observation_space_(observation_space_for(static_cast<std::size_t>(config.get_int("agents")))),
      action_space_(space::discrete(3)),
      rng_(seed),
      size_(config.get_int("size")) {
  const auto agents = static_cast<std::size_t>(config.get_int("agents"));
  if (size_ < static_cast<std::int64_t>(agents)) config.reject("size", "must be at least agents");
  positions_.resize(agents);
  targets_.resize(agents);
  scratch_.resize(static_cast<std::size_t>(size_));
}

bool cover::covered() const noexcept {
  return std::all_of(targets_.begin(), targets_.end(), [&](std::int64_t t) {
    return std::find(positions_.begin(), positions_.end(), t) != positions_.end();
  });
}

void cover::write_rows(const env_rows& rows) const {
  const std::size_t n = positions_.size();
  const auto scale = static_cast<float>(size_ - 1);
  for (std::size_t slot = 0; slot < n; ++slot) {
    float* obs = rows.observation(slot).data();
    *obs++ = static_cast<float>(positions_[slot]) / scale;
    *obs++ = static_cast<float>(slot);
    for (const auto t : targets_) *obs++ = static_cast<float>(t) / scale;
    for (std::size_t other = 0; other < n; ++other) {
      if (other != slot) *obs++ = static_cast<float>(positions_[other]) / scale;
    }
    *obs = static_cast<float>(steps_left_) / scale;
    auto mask = rows.action_mask(slot);
    mask[0] = positions_[slot] > 0 ? 1 : 0;
    mask[1] = 1;
    mask[2] = positions_[slot] < size_ - 1 ? 1 : 0;
  }
}

void cover::reset(const env_rows& rows) {
  // Targets: distinct cells (a partial Fisher-Yates shuffle); agents: any cells.
  std::iota(scratch_.begin(), scratch_.end(), 0);
  const std::size_t n = positions_.size();
  for (std::size_t i = 0; i < n; ++i) std::swap(scratch_[i], scratch_[i + rng_.below(scratch_.size() - i)]);
  std::copy_n(scratch_.begin(), n, targets_.begin());
  std::sort(targets_.begin(), targets_.end());
  for (auto& p : positions_) p = static_cast<std::int64_t>(rng_.below(static_cast<std::uint64_t>(size_)));
  steps_left_ = size_ - 1;
  write_rows(rows);
}

void cover::place(const env_rows& rows, std::vector<std::int64_t> agents, std::vector<std::int64_t> targets) {
  positions_ = std::move(agents);
  targets_ = std::move(targets);
  steps_left_ = size_ - 1;
  write_rows(rows);
}

void cover::step(const env_rows& rows) {
  const std::size_t n = positions_.size();
  for (std::size_t slot = 0; slot < n; ++slot) {
    const std::int32_t a = rows.action(slot);
    positions_[slot] = std::clamp<std::int64_t>(positions_[slot] + (a == 0 ? -1 : a == 2 ? 1 : 0), 0, size_ - 1);
  }
  --steps_left_;
  const bool over = steps_left_ <= 0;
  const float reward = over && covered() ? 1.0F : 0.0F;
  for (std::size_t slot = 0; slot < n; ++slot) {
    rows.reward(slot) = reward;
    rows.terminated(slot) = static_cast<std::uint8_t>(over);
  }
  write_rows(rows);
}

}  // namespace coral::envs
