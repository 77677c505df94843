#pragma once
// Private: the range checks of the settings DQN and R2D2 share (dqn_config).

#include "coral/learners/dqn_learner.hpp"
#include "coral/training/option_checks.hpp"

namespace coral::learners::detail {

using training::detail::out_of_range;

/// Throws config_error naming the first setting of `d` out of its range.
inline void check_q_options(const dqn_config& d) {
  if (d.n_step == 0) out_of_range("--n-step", d.n_step, "must be at least 1");
  if (d.batch_size == 0) out_of_range("--replay-batch", d.batch_size, "must be at least 1");
  if (!(d.replay_ratio > 0)) out_of_range("--replay-ratio", d.replay_ratio, "must be > 0");
  if (d.prefetch == 0) out_of_range("--prefetch", d.prefetch, "must be at least 1");
  if (!(d.learning_rate > 0 && d.learning_rate <= 1e6)) {
    out_of_range("--learning-rate", d.learning_rate, "must be in (0, 1000000]");
  }
  if (!(d.gamma > 0 && d.gamma <= 1)) out_of_range("--gamma", d.gamma, "must be in (0, 1]");
  if (!(d.priority_alpha >= 0 && d.priority_alpha <= 1)) {
    out_of_range("--priority-alpha", d.priority_alpha, "must be in [0, 1]");
  }
  if (!(d.priority_beta >= 0 && d.priority_beta <= 1)) {
    out_of_range("--priority-beta", d.priority_beta, "must be in [0, 1]");
  }
  if (d.target_update == 0) out_of_range("--target-update", d.target_update, "must be at least 1");
  if (!(d.max_grad_norm >= 0)) out_of_range("--max-grad-norm", d.max_grad_norm, "must be >= 0");
  if (!(d.adam_epsilon > 0 && d.adam_epsilon <= 1)) out_of_range("--adam-epsilon", d.adam_epsilon, "must be in (0, 1]");
  if (!(d.epsilon_base >= 0 && d.epsilon_base <= 1)) {
    out_of_range("--epsilon-base", d.epsilon_base, "must be in [0, 1]");
  }
  if (!(d.epsilon_alpha >= 0)) out_of_range("--epsilon-alpha", d.epsilon_alpha, "must be >= 0");
  if (d.publish_every == 0) out_of_range("--publish-every", d.publish_every, "must be at least 1");
}

}  // namespace coral::learners::detail
