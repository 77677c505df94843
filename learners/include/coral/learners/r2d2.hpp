#pragma once
/// \file
/// R2D2 (`--algo r2d2`; Kapturowski et al., 2019) as an algorithm: its
/// options, which its descriptor (r2d2.cpp) declares as flags. The learner
/// is in r2d2_learner.hpp, the acting policy in r2d2_policy.hpp.

#include <cstddef>

#include "coral/learners/dqn_learner.hpp"

namespace coral::learners {

/// R2D2's own hyper-parameters (the flags `--seq-len`, `--burn-in`,
/// `--seq-overlap`, `--prefetch-batches`, `--priority-eta`,
/// `--rescale-epsilon`); the ones it shares with DQN (learning rate, γ,
/// n-step, replay batch, capacity, ratio, priorities, target update,
/// exploration ladder) are read from dqn_config.
struct r2d2_config {
  std::size_t seq_len = 20;       ///< slots per stored sequence, burn-in included
  std::size_t burn_in = 10;       ///< leading slots that only warm the state
  /// `overlap` when not given: seq_len / 2. (0 is a real overlap, none.)
  static constexpr std::size_t half_overlap = static_cast<std::size_t>(-1);
  std::size_t overlap = half_overlap;  ///< slots shared by consecutive sequences; half_overlap: seq_len / 2
  std::size_t prefetch_batches = 1;  ///< batches the learner asks for per request (amortises the round trip)
  double priority_eta = 0.9;      ///< priority = η max|δ| + (1 − η) mean|δ|
  double rescale_epsilon = 1e-3;  ///< ε of h(x) = sign(x)(√(|x|+1) − 1) + εx
  /// The overlap in effect (seq_len / 2 when none was given).
  [[nodiscard]] std::size_t effective_overlap() const noexcept {
    return overlap == half_overlap ? seq_len / 2 : overlap;
  }
};

/// DQN's settings at R2D2's defaults where they differ (the paper's, or
/// what solves the small envs coral ships; docs/training.md, "R2D2").
[[nodiscard]] inline dqn_config r2d2_q_defaults() {
  dqn_config d;
  d.learning_rate = 1e-3;
  d.n_step = 5;
  d.batch_size = 32;        // sequences per update
  d.replay_ratio = 16;      // trained slots per env step
  d.replay_capacity = 5'000;  // sequences: 50,000 env steps at the default stride of 10
  d.priority_alpha = 0.9;
  d.priority_beta = 0.6;
  d.target_update = 100;
  d.max_grad_norm = 40;
  return d;
}

/// Everything `--algo r2d2` reads beyond the settings every run has. Its
/// descriptor (r2d2.cpp) declares a flag for each.
struct r2d2_options {
  dqn_config q = r2d2_q_defaults();  ///< the settings it shares with DQN (huber_delta and double_dqn unread)
  r2d2_config sequences;
  std::size_t lstm = 64;             ///< width of the Q-network's LSTM
};

}  // namespace coral::learners
