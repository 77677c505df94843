#pragma once
/// \file
/// R2D2's learner: a recurrent Q-network trained on fixed-length sequences
/// from a prioritized sequence replay, with burn-in, n-step double-Q
/// targets under the invertible value rescaling, and sequence priorities.
/// The fused engine or the torch twin behind a torch-free interface.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "coral/learners/network.hpp"
#include "coral/learners/r2d2.hpp"
#include "coral/replay/sequence.hpp"
#include "coral/training/learner_state.hpp"
#include "coral/training/training_stats.hpp"

namespace coral::learners {

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
/// action, the target scores it). Where the batch has masks (layout
/// mask_dim > 0) and dqn.action_masks is on, the online network picks among
/// the actions legal at each bootstrap observation only (a slot whose mask
/// has no legal action, padding, picks among all). The loss is the importance-weighted
/// (scaled so the batch's largest weight is 1) mean over sequences of the
/// mean squared TD error over each sequence's trained, valid slots; the
/// sequence's new priority is η max|δ| + (1 − η) mean|δ| over those slots
/// (sequence_priority), written into batch.priorities. Gradients
/// are clipped to max_grad_norm; Adam is written out over flat parameters
/// (a checkpoint restores it exactly); the target network copies the
/// online one every target_update updates.
///
/// The fused engine (coral/learners/fused/r2d2.hpp) computes it with
/// dqn.backend fused, the torch twin with torch: the same update to float
/// rounding, and states alike (a checkpoint of one resumes on the other).
///
/// Thread safety: one thread at a time (the learner actor).
class r2d2_learner {
 public:
  /// Builds both networks (identical at first), initialised from `seed`
  /// (fused::init_recurrent_q_network or torch::manual_seed, as
  /// dqn.backend says). spec.lstm must be > 0 (usage_error otherwise) and
  /// the action space one Discrete.
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

  /// What computes the updates: the torch twin (coral::learners_torch) or
  /// the fused engine; learners/src/learner_backends.hpp. The methods above
  /// forward to it.
  struct backend;

 private:
  std::unique_ptr<backend> impl_;
};

}  // namespace coral::learners
