#pragma once
/// \file
/// The replay rate limit as a gate policy: an env group may step while the
/// replay actor's insert allowance covers its env steps. Any replay actor:
/// transitions (replay_actor) or sequences (sequence_replay_actor).

#include <cstddef>
#include <cstdint>

#include "coral/actors/gate.hpp"
#include "coral/actors/inference_batcher.hpp"
#include "coral/actors/topology.hpp"
#include "coral/replay/rate_limited_replay.hpp"

namespace coral::training {

/// The most env steps that an inference_batcher with `options`, over
/// `wiring` (groups of wiring.envs_per_group), can keep without acting: it
/// takes its ready channels in turn and waits on one until it has a batch
/// (with dynamic batching, min_batch_size once the timeout passed), so it
/// may sit on one group short of that on its channel while every other
/// channel holds all of its groups. 0 when it acts on every group at once.
/// The replay actor's batcher_hold.
[[nodiscard]] std::size_t batcher_hold(const actors::wiring& wiring, const actors::inference_batcher::options& options);

/// Lets the group at the front through when the env steps let through so
/// far, plus its k rows, are within the replay's insert_allowance(); otherwise holds it
/// and leaves a note with the replay actor, which sends the gate
/// actors::allowance_raised once the allowance gets there. Why one side can
/// always move is worked out in rate_limited_replay.cpp, above raise_allowance().
///
/// Thread safety: the gate's calls come from its own actor; the replay
/// actor's side is atomics (see wait_for_allowance()).
class rate_limit_gate final : public actors::gate_policy {
 public:
  /// Counts from what the replay's limiter already counts (a resumed run),
  /// and makes the replay wake `gate`.
  rate_limit_gate(replay::rate_limited_replay& replay, actors::gate& gate)
      : replay_(&replay), let_through_(replay.limiter().inserts()) {
    replay.set_waker(&gate.inbox());
  }

  bool may_step(std::uint32_t, std::uint64_t, std::size_t rows) override {
    return replay_->wait_for_allowance(let_through_ + rows);
  }
  void stepped(std::uint32_t, std::uint64_t, std::size_t rows) override { let_through_ += rows; }
  /// In order: the replay keeps one note of what the gate waits for, so a
  /// group let through after one was held would clear the held one's note,
  /// and the replay's wake-up for it would be lost.
  bool in_order() const override { return true; }

 private:
  replay::rate_limited_replay* replay_;
  std::uint64_t let_through_;  // env steps let through, in the limiter's count
};

}  // namespace coral::training
