#include "coral/envs/env_batch.hpp"

#include <algorithm>

namespace coral::envs {

env_batch::env_batch(std::size_t rows, const space& observation_space, const space& action_space)
    : env_batch(rows, observation_space.flat_size(), action_space.discrete_size(), action_space.continuous_size(),
                action_mask_size(action_space)) {}

env_batch::env_batch(std::size_t rows, std::size_t obs_dim, std::size_t discrete_action_dim,
                     std::size_t continuous_action_dim, std::size_t mask_dim)
    : rows_(rows),
      obs_dim_(obs_dim),
      discrete_dim_(discrete_action_dim),
      continuous_dim_(continuous_action_dim),
      mask_dim_(mask_dim),
      observations_(rows, obs_dim),
      final_observations_(rows, obs_dim),
      discrete_actions_(rows, discrete_action_dim),
      continuous_actions_(rows, continuous_action_dim),
      rewards_(rows, 1),
      terminated_(rows, 1),
      truncated_(rows, 1),
      active_(rows, 1),
      action_masks_(rows, mask_dim),
      teams_(rows, 1),
      episode_returns_(rows, 1),
      episode_lengths_(rows, 1),
      failed_(rows, 1),
      commands_(rows, 1) {
  std::fill_n(action_masks_.data(), rows * mask_dim, std::uint8_t{1});
  // Every row holds an agent until an env says otherwise (a batch filled
  // by hand, without envs, is acted on whole).
  std::fill_n(active_.data(), rows, std::uint8_t{1});
}

env_rows env_batch::view(std::size_t first, std::size_t count) noexcept {
  env_rows::parts p;
  p.count = count;
  p.observations = observations_.data() + first * obs_dim_;
  p.obs_dim = obs_dim_;
  p.discrete_actions = discrete_actions_.data() + first * discrete_dim_;
  p.discrete_dim = discrete_dim_;
  p.continuous_actions = continuous_actions_.data() + first * continuous_dim_;
  p.continuous_dim = continuous_dim_;
  p.rewards = rewards_.data() + first;
  p.terminated = terminated_.data() + first;
  p.truncated = truncated_.data() + first;
  p.active = active_.data() + first;
  p.action_masks = action_masks_.data() + first * mask_dim_;
  p.mask_dim = mask_dim_;
  return env_rows(p);
}

}  // namespace coral::envs
