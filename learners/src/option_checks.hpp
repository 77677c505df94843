#pragma once
// Private: the error every option check throws, the check of which
// algorithm reads which setting, and the checks DQN and R2D2 share.

#include <string_view>

#include <fmt/format.h>

#include "coral/actors/errors.hpp"
#include "coral/core/error.hpp"
#include "coral/learners/train.hpp"

namespace coral::learners::detail {

/// Throws config_error: `flag` has `value`, which breaks `requirement`.
[[noreturn]] inline void out_of_range(std::string_view flag, const auto& value, std::string_view requirement) {
  throw config_error(fmt::format(fmt::runtime(actors::errors::flag_out_of_range), flag, value, requirement));
}

/// Throws config_error (errors::setting_of_other_algo) for the first
/// algorithm-specific setting of `o` that differs from its default and that
/// the built-in algorithm `o.algo` does not read (algorithm_settings.cpp has
/// the table), naming the flag and the algorithms that read it. Every
/// built-in algorithm's options_check runs it, so that the command, config
/// files, the Python binding and C++ compositions all get the refusal. A
/// setting given at its default value is not told apart from one not given
/// here; the command refuses those with check_flag_read (train.hpp).
/// Does nothing for an algorithm that is not built in.
void check_settings_read(const train_options& o);

/// The ranges of the flags DQN and R2D2 share (dqn_config): n-step, replay
/// batch, ratio, prefetch, learning rate, γ, priority exponents, target
/// update, gradient clip, the exploration ladder, publish-every.
inline void check_q_options(const train_options& o) {
  const auto& d = o.dqn;
  if (d.n_step == 0) out_of_range("--n-step", d.n_step, "must be at least 1");
  if (d.batch_size == 0) out_of_range("--replay-batch", d.batch_size, "must be at least 1");
  if (!(d.replay_ratio > 0)) out_of_range("--replay-ratio", d.replay_ratio, "must be > 0");
  if (d.prefetch == 0) out_of_range("--prefetch", d.prefetch, "must be at least 1");
  if (!(d.learning_rate > 0)) out_of_range("--learning-rate", d.learning_rate, "must be > 0");
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
