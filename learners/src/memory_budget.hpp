#pragma once
// What a training run will allocate, checked in validate() before anything
// is built (see coral/actors/memory_budget.hpp for the sampler's part).

#include "coral/actors/memory_budget.hpp"
#include "coral/learners/train.hpp"

namespace coral::learners::detail {

/// The parts of the run of `o` for an env of `shape`: the sampler's, then
/// PPO's rollout segments and update tensors or DQN's replay and prefetched
/// batches, then the network (parameters, gradients, Adam moments, target
/// and published copies) and its activations.
[[nodiscard]] actors::memory_estimate estimate_memory(const train_options& o, const actors::env_shape& shape);

/// Throws config_error (actors::errors::memory_over_budget) naming the
/// flag at fault when the run of `o` does not fit in actors::available_memory().
/// Builds one env to read its spaces.
void check_memory_budget(const train_options& o);

}  // namespace coral::learners::detail
