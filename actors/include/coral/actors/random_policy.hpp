#pragma once
/// \file
/// `random`: the built-in policy that acts uniformly at random, one rng per
/// row.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "coral/actors/policy.hpp"
#include "coral/core/rng.hpp"
#include "coral/envs/space.hpp"

namespace coral::actors {

/// Uniform over the action space. Row r draws from its own rng seeded from
/// (seed, streams[r]), or (seed, r) without `streams`, so the actions a row
/// gets do not depend on which rows share its batch: runs are reproducible
/// in every topology where the env steps are. When the batch carries action
/// masks (env_batch::has_action_masks()), each discrete component is drawn
/// uniformly among the values its mask row marks legal, so a masked action
/// is never taken. A sampler of several shards,
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
  std::vector<std::int32_t> counts_;  ///< envs::discrete_counts() of the action space
  std::vector<coral::rng> rngs_;
};

}  // namespace coral::actors
