#pragma once
/// \file
/// `transition`: one n-step transition, as the assembler emits it and the
/// replay buffer takes it.

#include <cstdint>
#include <span>

namespace coral::replay {

/// A view of one n-step transition from time t of one env stream:
/// observation o_t, action a_t, return r_t + γ r_{t+1} + … + γ^{k−1} r_{t+k−1},
/// and the observation o_{t+k} to bootstrap from, k = steps.
///
/// k is n within an episode and less than n for the last n − 1 steps of an
/// episode. discount is γ^k, or 0 when the episode terminated within those k
/// steps (no bootstrap). A truncated episode keeps γ^k: the target still
/// bootstraps from the final observation. The spans belong to whoever made
/// the view.
struct transition {
  std::span<const float> observation;           ///< o_t, obs_dim floats
  std::span<const std::int32_t> discrete_action;  ///< int32 part of a_t
  std::span<const float> continuous_action;     ///< float part of a_t
  float n_step_return = 0.0f;                   ///< discounted sum of the k rewards
  float discount = 0.0f;                        ///< γ^k, or 0 when terminated
  std::uint32_t steps = 0;                      ///< k, in [1, n]
  std::span<const float> next_observation;      ///< o_{t+k} (the final observation at an episode's end)
  bool last_of_episode = false;                 ///< the last transition of its episode (then steps == 1)
  /// Where the env masks actions (mask_dim bytes each, 1 = legal; empty
  /// otherwise): the mask a_t was chosen under, and the legal actions at
  /// o_{t+k}, over which the target's max runs.
  std::span<const std::uint8_t> action_mask;
  std::span<const std::uint8_t> next_action_mask;
};

}  // namespace coral::replay
