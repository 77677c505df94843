#pragma once
/// \file
/// The policy interface the inference batcher calls on a batch of rows, and
/// the two torch-free policies: `random` and `constant`.
///
/// A policy reads observation rows of an env_batch and writes action rows.
/// Rows arrive as ranges (one per env group in the batch), because in pool
/// mode the groups in a batch are whichever finished first. A network policy
/// gathers them into its own input tensor; the policies here work in place.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "coral/actors/messages.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/rng.hpp"
#include "coral/envs/space.hpp"

namespace coral::actors {

/// What a policy is handed: the batch, the rows to act on, and optional
/// per-row outputs (indexed by batch row) for learners that need them.
struct policy_rows {
  envs::env_batch& batch;
  std::span<const row_range> ranges;
  std::span<float> log_probs;  ///< empty, or one per batch row
  std::span<float> values;     ///< empty, or one per batch row
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

/// Uniform over the action space. Row r draws from its own rng seeded from
/// (seed, streams[r]), or (seed, r) without `streams`, so the actions a row
/// gets do not depend on which rows share its batch: runs are reproducible
/// in every topology where the env steps are. A sampler of several shards,
/// whose rows are padded apart, gives sampler::row_streams(): each env then
/// gets the actions it gets with one shard and in the plain loop.
class random_policy final : public policy {
 public:
  /// `streams`: empty, or one per row.
  random_policy(const envs::space& action_space, std::size_t rows, std::uint64_t seed,
                std::span<const std::uint64_t> streams = {});
  void act(const policy_rows& rows) override;
  void load_weights(std::span<const float>) override {}
  /// Each row draws from its own rng: disjoint rows share nothing.
  [[nodiscard]] bool acts_concurrently() const noexcept override { return true; }

 private:
  envs::space action_space_;
  std::uint64_t discrete_n_ = 0;  ///< > 0 when the space is one Discrete(n): the fast path
  std::vector<envs::rng> rngs_;
};

/// The same action for every row: every discrete component 0, every Box
/// element the point of its bounds nearest 0.
class constant_policy final : public policy {
 public:
  explicit constant_policy(const envs::space& action_space);
  void act(const policy_rows& rows) override;
  void load_weights(std::span<const float>) override {}
  /// It only reads its own members.
  [[nodiscard]] bool acts_concurrently() const noexcept override { return true; }

 private:
  std::vector<std::int32_t> discrete_;
  std::vector<float> continuous_;
};

/// Builds policy `name` (`random`, whose rows draw from `streams` as
/// random_policy says, or `constant`). Throws config_error naming
/// `--policy` and the allowed values otherwise.
[[nodiscard]] std::unique_ptr<policy> make_builtin_policy(std::string_view name, const envs::space& action_space,
                                                          std::size_t rows, std::uint64_t seed,
                                                          std::span<const std::uint64_t> streams = {});

}  // namespace coral::actors
