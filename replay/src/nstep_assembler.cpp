#include "coral/replay/nstep_assembler.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/replay/errors.hpp"

namespace coral::replay {

nstep_assembler::nstep_assembler(const nstep_config& config)
    : config_(config),
      observations_(config.n_step, config.obs_dim),
      discrete_(config.n_step, config.discrete_action_dim),
      continuous_(config.n_step, config.continuous_action_dim),
      masks_(config.n_step, config.mask_dim),
      rewards_(config.n_step),
      next_observation_(1, config.obs_dim),
      next_mask_(1, config.mask_dim) {
  if (config.n_step == 0) throw config_error(std::string(errors::zero_n_step));
  if (!(config.gamma >= 0.0 && config.gamma <= 1.0)) {
    throw config_error(fmt::format(fmt::runtime(errors::bad_gamma), config.gamma));
  }
  gamma_powers_.resize(config.n_step + 1);
  gamma_powers_[0] = 1.0;
  for (std::size_t i = 1; i <= config.n_step; ++i) gamma_powers_[i] = gamma_powers_[i - 1] * config.gamma;
  out_.reserve(config.n_step);
}

std::span<const transition> nstep_assembler::push(std::span<const float> observation,
                                                  std::span<const std::int32_t> discrete_action,
                                                  std::span<const float> continuous_action, float reward,
                                                  bool terminated, bool truncated,
                                                  std::span<const float> next_observation,
                                                  std::span<const std::uint8_t> action_mask,
                                                  std::span<const std::uint8_t> next_action_mask) {
  out_.clear();
  const std::size_t n = config_.n_step;
  if (count_ == n) {  // the previous push emitted the oldest; drop it now that its views are dead
    first_ = (first_ + 1) % n;
    --count_;
  }
  const std::size_t slot = (first_ + count_) % n;
  std::copy(observation.begin(), observation.end(), observations_.row(slot).begin());
  std::copy(discrete_action.begin(), discrete_action.end(), discrete_.row(slot).begin());
  std::copy(continuous_action.begin(), continuous_action.end(), continuous_.row(slot).begin());
  std::copy(action_mask.begin(), action_mask.end(), masks_.row(slot).begin());
  rewards_[slot] = reward;
  ++count_;
  std::copy(next_observation.begin(), next_observation.end(), next_observation_.row(0).begin());
  std::copy(next_action_mask.begin(), next_action_mask.end(), next_mask_.row(0).begin());

  if (terminated || truncated) {
    for (std::size_t i = 0; i < count_; ++i) emit(i, count_ - i, terminated, i + 1 == count_);
    // Views point into rows that stay untouched until the next push, which
    // starts a fresh episode.
    first_ = 0;
    count_ = 0;
  } else if (count_ == n) {
    emit(0, n, false, false);
  }
  return out_;
}

void nstep_assembler::emit(std::size_t index, std::size_t steps_left, bool terminated, bool last) {
  const std::size_t n = config_.n_step;
  const std::size_t slot = (first_ + index) % n;
  double ret = 0.0;
  for (std::size_t i = 0; i < steps_left; ++i) ret += gamma_powers_[i] * rewards_[(slot + i) % n];
  transition t;
  t.observation = observations_.row(slot);
  t.discrete_action = discrete_.row(slot);
  t.continuous_action = continuous_.row(slot);
  t.n_step_return = static_cast<float>(ret);
  t.discount = terminated ? 0.0f : static_cast<float>(gamma_powers_[steps_left]);
  t.steps = static_cast<std::uint32_t>(steps_left);
  t.next_observation = next_observation_.row(0);
  t.action_mask = masks_.row(slot);
  t.next_action_mask = next_mask_.row(0);
  t.last_of_episode = last;
  out_.push_back(t);
}

}  // namespace coral::replay
