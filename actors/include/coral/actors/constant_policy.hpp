#pragma once
/// \file
/// `constant`: the built-in policy that takes the same action on every row.

#include <cstdint>
#include <span>
#include <vector>

#include "coral/actors/policy.hpp"
#include "coral/envs/space.hpp"

namespace coral::actors {

/// The same action for every row: every discrete component 0, every Box
/// element the point of its bounds nearest 0. With action masks
/// (env_batch::has_action_masks()) each discrete component is instead its
/// lowest legal value.
class constant_policy final : public policy {
 public:
  explicit constant_policy(const envs::space& action_space);
  void act(const policy_rows& rows) override;
  void load_weights(std::span<const float>) override {}
  /// It only reads its own members.
  [[nodiscard]] bool acts_concurrently() const noexcept override { return true; }

 private:
  std::vector<std::int32_t> discrete_;
  std::vector<std::int32_t> counts_;  ///< envs::discrete_counts() of the action space
  std::vector<float> continuous_;
};

}  // namespace coral::actors
