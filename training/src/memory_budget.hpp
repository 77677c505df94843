#pragma once
// What a training run will allocate, checked in validate() before anything
// is built (see coral/actors/memory_budget.hpp for the sampler's part).

#include "coral/actors/memory_budget.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/train_options.hpp"

namespace coral::training::detail {

/// The parts of the run of `o` (whose algo_options are filled in) for an
/// env of `shape`: the sampler's, then what `algo` adds (algorithm_descriptor::memory).
[[nodiscard]] actors::memory_estimate estimate_memory(const train_options& o, const algorithm_descriptor& algo,
                                                      const actors::env_shape& shape);

/// Throws config_error (actors::errors::memory_over_budget) naming the
/// flag at fault when the run of `o` does not fit in actors::available_memory():
/// --num-envs, --hidden or one of `algo`'s sizing settings, whichever's
/// default saves the most. Builds one env to read its spaces.
void check_memory_budget(const train_options& o, const algorithm_descriptor& algo);

}  // namespace coral::training::detail
