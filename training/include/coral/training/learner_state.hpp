#pragma once
/// \file
/// What a gradient learner needs to continue exactly: its flat parameters,
/// Adam's moments and counters. Every built-in algorithm keeps one in its
/// checkpoints (checkpoint.hpp).

#include <cstdint>
#include <vector>

namespace coral::training {

/// Everything a checkpoint needs to continue a learner exactly.
struct learner_state {
  std::vector<float> parameters;
  std::vector<float> adam_m;       ///< first moments, flat like parameters
  std::vector<float> adam_v;       ///< second moments
  std::uint64_t adam_steps = 0;
  std::uint64_t updates = 0;
  std::uint64_t env_steps = 0;     ///< env steps trained on
  std::uint64_t rng = 0;           ///< state of the minibatch-shuffling generator
  /// An observation normaliser's running_moments::save() (empty without one).
  std::vector<double> observation_moments;
  /// A reward scaler's reward_scaler::save() (empty without one).
  std::vector<double> reward_scaling;
};

}  // namespace coral::training
