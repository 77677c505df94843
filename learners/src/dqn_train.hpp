#pragma once
// Private: the DQN half of train() and validate().

#include <ostream>

#include "coral/learners/train.hpp"

namespace coral::learners {

/// Checks the DQN-only options (validate() checks the sampler's and the shared ones first); throws config_error naming the flag.
void validate_dqn(const train_options& options);

/// train() for --algo dqn: sampler, replay feeder, replay actor and DQN learner.
train_result train_dqn(const train_options& options, std::ostream& progress);

}  // namespace coral::learners
