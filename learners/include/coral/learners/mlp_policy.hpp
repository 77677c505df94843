#pragma once
/// \file
/// The acting side of the MLP actor-critic: dense kernels on the CPU, no torch call.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "coral/actors/policy.hpp"
#include "coral/learners/network.hpp"

namespace coral::learners {

/// The actor-critic as the inference batcher runs it.
///
/// The network is the learner's (same layout, same flat weights: its torch
/// twin's parameter order); load_weights() reads the weights into small
/// dense kernels that act() runs row by row on the CPU. At the batch
/// sizes a batcher forms (2 to 64 rows), torch's per-operator dispatch and
/// Debian's reference BLAS cost more than the arithmetic: the kernels are
/// several times faster, allocate nothing, and use no thread pool, so the
/// policy never competes with the env threads for cores.
///
/// act() acts for the active rows only (envs/env.hpp: an inactive row's
/// action is ignored): an inactive row's action, log probability, value,
/// frame stack, recurrent state and rng are left as they were.
///
/// act(): stacks each row's observations over `frames` (the stack restarts
/// with each episode), runs the actor and the critic (with spec.lstm: the
/// encoder, the LSTM cell from the row's own state, reset to zeros when the
/// row's observation starts an episode, and the heads), and samples the action
/// from that row's own rng, seeded from (seed, row) in a stream family apart
/// from the envs' (seed, env index) streams: the actions a row gets
/// do not depend on which rows share its batch, so the topologies sample the
/// same trajectories. Writes the log probability and the value of every row
/// when the spans are given. A Box element is sampled from an unbounded
/// Gaussian; the env gets the sample clipped to its bounds, while the log
/// probability is that of the unclipped sample, which sampled_actions()
/// keeps for the rollout assembler (the learner scores the same sample).
///
/// With spec.normalize_observations the weights end with the learner's
/// normalizer_block() and each (stacked) input row is normalised by
/// normalize_observation() first, exactly as the learner does; before the
/// first load_weights() the normalisation is the identity (clipped).
///
/// Allocation: none in act(); load_weights() reuses its buffers.
///
/// Thread safety: one batcher at a time, as for every policy.
class mlp_policy final : public actors::policy {
 public:
  /// A policy for `rows` batch rows. Its weights are zeros (uniform
  /// actions, zero values) until load_weights(); the learner publishes its
  /// own before sampling.
  mlp_policy(const network_spec& spec, std::size_t rows, std::uint64_t seed);
  ~mlp_policy() override;
  mlp_policy(const mlp_policy&) = delete;
  mlp_policy& operator=(const mlp_policy&) = delete;

  void act(const actors::policy_rows& rows) override;
  /// Throws usage_error if the size is not published_weight_count(spec).
  void load_weights(std::span<const float> weights) override;

  /// The unclipped Gaussian samples of the last act() per batch row,
  /// row-major (continuous_dim per row); row r is valid from act() on row r
  /// until the next act() on it. Empty for an action space without Box elements.
  [[nodiscard]] std::span<const float> sampled_actions() const noexcept;

  /// With spec.lstm: the recurrent state (h then c, state_dim floats) each
  /// batch row's last act() started from, row-major by batch row: the state
  /// after the row's previous step, or zeros when the row's observation
  /// started an episode. Row r is valid from act() on row r until the next
  /// act() on it. Empty without an LSTM.
  [[nodiscard]] std::span<const float> recurrent_states() const noexcept;

  /// Greedy actions (argmax / mean) instead of samples, for evaluation.
  void set_deterministic(bool on) noexcept;

  /// Whether act() honours the env's action masks (the default): a masked
  /// value's logit is −∞ (never drawn, no share of the probability or of
  /// the log probability). Off, the policy acts as if every value were
  /// legal, and the env handles what it gets (`--no-action-masks`).
  void set_use_masks(bool on) noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace coral::learners
