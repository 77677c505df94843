#pragma once
/// \file
/// The policy interface the inference batcher calls on a batch of rows. The
/// two torch-free policies, `random` and `constant`, are in
/// random_policy.hpp and constant_policy.hpp; builtin_policy.hpp builds
/// either by name.
///
/// A policy reads observation rows of an env_batch and writes action rows.
/// Rows arrive as ranges (one per env group in the batch), because in pool
/// mode the groups in a batch are whichever finished first. A network policy
/// gathers them into its own input tensor; the torch-free ones work in place.

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "coral/actors/messages.hpp"
#include "coral/envs/env_batch.hpp"

namespace coral::actors {

/// What a policy is handed: the batch, the rows to act on, and optional
/// per-row outputs (indexed by batch row) for learners that need them.
///
/// Besides observations, a row carries what the env says about the action
/// to take (envs/env.hpp): `active` (an inactive row's action is ignored),
/// its action mask (one byte per value of each discrete component, 1 =
/// legal; all 1 unless masked()) and its slot's team id. A policy that
/// ignores masks still works: the env handles the illegal actions it gets.
struct policy_rows {
  envs::env_batch& batch;
  std::span<const row_range> ranges;
  std::span<float> log_probs;  ///< empty, or one per batch row
  std::span<float> values;     ///< empty, or one per batch row

  /// True when the env masks actions (a mask row may hold a 0).
  [[nodiscard]] bool masked() const noexcept { return batch.has_action_masks(); }
  /// The action mask of batch row `row`, width batch.action_mask_dim().
  [[nodiscard]] std::span<const std::uint8_t> action_mask(std::size_t row) const noexcept {
    return std::as_const(batch).action_masks().row(row);
  }
  /// 1 if batch row `row` holds an agent in play.
  [[nodiscard]] bool active(std::size_t row) const noexcept { return std::as_const(batch).active()[row] != 0; }
  /// The team id of batch row `row`'s slot.
  [[nodiscard]] std::int32_t team(std::size_t row) const noexcept { return std::as_const(batch).teams()[row]; }
};

/// Chooses actions. Called by one batcher at a time, on its executor (by
/// several at once, on disjoint rows, only if acts_concurrently()).
class policy {
 public:
  virtual ~policy() = default;
  /// Writes an action into the action row of every row in `rows.ranges`
  /// (and, if the policy has them and the spans are not empty, the log
  /// probability of that action and the state value). Must not allocate.
  virtual void act(const policy_rows& rows) = 0;
  /// Loads flat weights published by a learner (see coral::latest). A policy
  /// without weights ignores them.
  virtual void load_weights(std::span<const float> weights) = 0;
  /// Whether act() may run on several threads at once for disjoint rows
  /// (what a sampler of several shards does: one batcher per shard). False
  /// unless a policy says otherwise: a network policy shares its buffers.
  [[nodiscard]] virtual bool acts_concurrently() const noexcept { return false; }

 protected:
  policy() = default;
  policy(const policy&) = default;
  policy& operator=(const policy&) = default;
};

}  // namespace coral::actors
