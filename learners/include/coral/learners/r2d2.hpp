#pragma once
/// \file
/// R2D2 (`--algo r2d2`): a recurrent Q-network trained on fixed-length
/// sequences from a prioritized sequence replay, with burn-in, n-step
/// double-Q targets under the invertible value rescaling, and sequence
/// priorities (Kapturowski et al., 2019). The learner and the acting policy;
/// torch inside, a torch-free interface.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "coral/actors/epsilon_schedule.hpp"
#include "coral/actors/policy.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/network.hpp"
#include "coral/learners/ppo_learner.hpp"
#include "coral/training/training_stats.hpp"
#include "coral/replay/sequence.hpp"

namespace coral::learners {

/// R2D2's own hyper-parameters (the flags `--seq-len`, `--burn-in`,
/// `--seq-overlap`, `--prefetch-batches`, `--priority-eta`,
/// `--rescale-epsilon`); the ones it shares with DQN (learning rate, γ,
/// n-step, replay batch, capacity, ratio, priorities, target update,
/// exploration ladder) are read from dqn_config.
struct r2d2_config {
  std::size_t seq_len = 80;       ///< slots per stored sequence, burn-in included
  std::size_t burn_in = 40;       ///< leading slots that only warm the state
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
/// what the small envs need; docs/training.md, "R2D2").
[[nodiscard]] inline dqn_config r2d2_q_defaults() {
  dqn_config d;
  d.learning_rate = 1e-3;
  d.gamma = 0.997;
  d.n_step = 5;
  d.batch_size = 32;        // sequences per update
  d.replay_ratio = 4;
  d.replay_capacity = 20'000;  // sequences
  d.priority_alpha = 0.9;
  d.priority_beta = 0.6;
  d.target_update = 400;
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

/// The parameter count of R2D2's network for `spec` (spec.lstm > 0, one
/// Discrete action space): the trunk and a linear Q head.
[[nodiscard]] std::size_t r2d2_parameter_count(const network_spec& spec);

/// What one R2D2 update measured, besides update_stats' DQN fields.
struct r2d2_update_stats {
  training::update_stats base;             ///< td_loss, mean_q, mean_abs_td, learning_rate, seconds
  double q_max = 0;              ///< largest Q (unrescaled) of the trained slots
  double grad_norm = 0;          ///< before clipping
  double burn_in_seconds = 0;    ///< unrolling the burn-in slots (no gradient)
  double learn_seconds = 0;      ///< the rest of the update
};

/// The R2D2 learner on batches of sequences (sequence_batch).
///
/// For each sequence: both networks are unrolled over the burn-in slots
/// without gradient from the stored state; the online network then unrolls
/// the remaining slots (and observation slot `length`) with gradient, the
/// target network without. The state is zeroed before every slot flagged
/// slot_first. Targets are n-step double-Q in rescaled space
/// (nstep_batch_targets: the online network picks the bootstrap
/// action, the target scores it). The loss is the importance-weighted
/// (scaled so the batch's largest weight is 1) mean over sequences of the
/// mean squared TD error over each sequence's trained, valid slots; the
/// sequence's new priority is η max|δ| + (1 − η) mean|δ| over those slots
/// (sequence_priority), written into batch.priorities. Gradients
/// are clipped to max_grad_norm; Adam is written out over flat parameters
/// (a checkpoint restores it exactly); the target network copies the
/// online one every target_update updates.
///
/// Thread safety: one thread at a time (the learner actor).
class r2d2_learner {
 public:
  /// Seeds torch with `seed` and builds both networks (identical at first).
  /// spec.lstm must be > 0 and the action space one Discrete.
  r2d2_learner(const network_spec& spec, const dqn_config& dqn, const r2d2_config& config, std::uint64_t seed);
  ~r2d2_learner();
  r2d2_learner(const r2d2_learner&) = delete;
  r2d2_learner& operator=(const r2d2_learner&) = delete;

  /// One update on `batch`; writes the new priority of each draw into batch.priorities.
  r2d2_update_stats update(replay::sequence_batch& batch);

  /// The online network's flat weights (what the policy loads).
  [[nodiscard]] std::vector<float> weights() const;
  /// The target network's flat weights.
  [[nodiscard]] std::vector<float> target_weights() const;
  /// Learner state (online weights, Adam, counters) for a checkpoint.
  [[nodiscard]] training::learner_state state() const;
  /// Restores a state and the target weights; usage_error if sizes differ.
  void restore(const training::learner_state& s, std::span<const float> target);
  [[nodiscard]] std::uint64_t updates() const noexcept;
  /// Counts env steps into the state a checkpoint keeps.
  void set_env_steps(std::uint64_t steps) noexcept;

  /// The online network's Q values (rescaled space) of T steps of one row
  /// from a zero state: `observations` T × obs_dim, `resets` T (1: zero the
  /// state before that step). For tests.
  [[nodiscard]] std::vector<float> q_values(std::span<const float> observations,
                                            std::span<const std::uint8_t> resets) const;
  /// The online network's state (h then c) after T steps of one row from
  /// `initial` (2 × lstm floats), as the burn-in leaves it. For tests.
  [[nodiscard]] std::vector<float> state_after(std::span<const float> observations, std::span<const std::uint8_t> resets,
                                               std::span<const float> initial) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// R2D2's acting side: the recurrent Q-network as CPU kernels, each batch
/// row with its own state (h, c), zeroed when the row's observation starts
/// an episode (terminated, truncated, or a reset after a failure), and
/// ε-greedy actions with each row's ε from the Ape-X ladder
/// (actors::epsilon_schedule). The network runs on every act, exploring or
/// not, so that the state follows every observation. recurrent_states()
/// holds the state each row's last act started from (the sequence feeder
/// stores it with a sequence). Writes max Q into `values` when given; log
/// probabilities are 0.
///
/// Allocation: none in act(). Thread safety: one batcher at a time.
class r2d2_policy final : public actors::policy {
 public:
  /// A policy for `rows` batch rows of `spec`, which has acted `steps_done`
  /// env steps before (the exploration schedule continues from there).
  r2d2_policy(const network_spec& spec, std::size_t rows, std::uint64_t seed, const dqn_config& config,
              std::uint64_t steps_done);
  ~r2d2_policy() override;
  r2d2_policy(const r2d2_policy&) = delete;
  r2d2_policy& operator=(const r2d2_policy&) = delete;

  void act(const actors::policy_rows& rows) override;
  /// Throws usage_error if the size is not r2d2_parameter_count(spec).
  void load_weights(std::span<const float> weights) override;

  /// The state (h then c, 2 × lstm floats) each row's last act() started
  /// from, row-major by batch row.
  [[nodiscard]] std::span<const float> recurrent_states() const noexcept;
  /// The exploration schedule (read by the progress line).
  [[nodiscard]] const actors::epsilon_schedule& schedule() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace coral::learners
