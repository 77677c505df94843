#pragma once
/// \file
/// The number of agents in play of a multi-agent run: a gate policy that
/// counts each env group's active rows as the group arrives at the gate and
/// hands every call on to the policy it wraps.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "coral/actors/gate.hpp"
#include "coral/envs/env_batch.hpp"

namespace coral::training {

/// Wraps a gate policy; counts agents in play (envs::env_batch::active()).
///
/// Thread safety: the gate calls arrived() and the rest from its actor, as
/// for every gate policy; the group's rows are the gate's to read then
/// (the group waits). total() may be called from any thread.
class agents_in_play final : public actors::gate_policy {
 public:
  /// Counts the rows of `group_rows[g]` in `batch`; `inner` (which must
  /// outlive it) decides.
  agents_in_play(actors::gate_policy& inner, const envs::env_batch& batch, std::vector<actors::row_range> group_rows)
      : inner_(&inner), batch_(&batch), group_rows_(std::move(group_rows)), counts_(group_rows_.size(), 0) {}

  void arrived(std::uint32_t group, std::uint64_t step) override {
    const auto range = group_rows_[group];
    const auto active = batch_->active();
    std::size_t n = 0;
    for (std::uint32_t r = range.first; r < range.first + range.count; ++r) n += active[r] != 0 ? 1 : 0;
    // The gate's actor alone writes: a plain read-modify-write of the sum.
    total_.store(total_.load(std::memory_order_relaxed) - counts_[group] + n, std::memory_order_relaxed);
    counts_[group] = n;
    inner_->arrived(group, step);
  }
  [[nodiscard]] bool may_step(std::uint32_t group, std::uint64_t step, std::size_t rows) override {
    return inner_->may_step(group, step, rows);
  }
  [[nodiscard]] bool in_order() const override { return inner_->in_order(); }
  void stepped(std::uint32_t group, std::uint64_t step, std::size_t rows) override {
    inner_->stepped(group, step, rows);
  }

  /// Active rows of every group as it last arrived (0 before any arrival).
  [[nodiscard]] std::size_t total() const noexcept { return total_.load(std::memory_order_relaxed); }

 private:
  actors::gate_policy* inner_;
  const envs::env_batch* batch_;
  std::vector<actors::row_range> group_rows_;
  std::vector<std::size_t> counts_;  // the gate's actor only
  std::atomic<std::size_t> total_{0};
};

}  // namespace coral::training
