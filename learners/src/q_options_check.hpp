#pragma once
// Private: the range checks of the settings DQN and R2D2 share (dqn_config).

#include "coral/learners/dqn_learner.hpp"
#include "coral/training/option_checks.hpp"

namespace coral::learners::detail {

using training::detail::out_of_range;

/// Throws config_error naming the first setting of `d` out of its range
/// (beyond the number ranges of q_fields(), which the run checks itself).
inline void check_q_options(const dqn_config& d) {
  if (d.n_step == 0) out_of_range("--n-step", d.n_step, "must be at least 1");
  if (d.batch_size == 0) out_of_range("--replay-batch", d.batch_size, "must be at least 1");
  if (d.prefetch == 0) out_of_range("--prefetch", d.prefetch, "must be at least 1");
  if (d.target_update == 0) out_of_range("--target-update", d.target_update, "must be at least 1");
  if (d.publish_every == 0) out_of_range("--publish-every", d.publish_every, "must be at least 1");
}

}  // namespace coral::learners::detail
