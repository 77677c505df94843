#pragma once
/// \file
/// `rate_limited_replay`: the rate limiter of a replay actor and the insert
/// allowance it gives the sampling side, whatever the replay stores
/// (transitions or sequences). The base of every basic_replay_actor, and
/// what the rate-limit gate holds on to.
///
/// The limiter (Reverb's SampleToInsertRatio) counts inserts in env steps
/// and samples in the replay's sampled units (basic_replay_actor_config's
/// ratio_counts). The actor enforces it on both sides without dropping
/// anything: a sample request waits in the actor until the limiter allows a
/// batch, and the rate-limit gate holds env groups back while
/// insert_allowance() is used up. The actor raises the allowance after
/// every batch it serves (and after every insert while nothing is
/// sampleable) and wakes the gate if it was waiting. Why one side can
/// always move is worked out in rate_limited_replay.cpp, above
/// raise_allowance().
///
/// Thread safety: insert_allowance(), steps_in_flight(), grant() and
/// wait_for_allowance() may be called from any thread; set_waker() and
/// limiter() only while the actor is not running.

#include <atomic>
#include <cstdint>

#include "coral/actors/messages.hpp"
#include "coral/channels/channel.hpp"
#include "coral/replay/rate_limiter.hpp"

namespace coral::replay {

/// A replay actor's limiter and insert allowance.
class rate_limited_replay {
 public:
  rate_limited_replay(const rate_limited_replay&) = delete;
  rate_limited_replay& operator=(const rate_limited_replay&) = delete;

  /// The total env steps the sampling side may have inserted so far without
  /// breaking the ratio: min_size + (sampled + error_buffer) /
  /// samples_per_insert, and, while nothing is sampleable, at least the
  /// inserts plus steps_in_flight(). Never decreases.
  [[nodiscard]] std::uint64_t insert_allowance() const noexcept { return allowance_.load(); }
  /// The env steps the sampling side may always have on the way on top of
  /// what was inserted: max_group_steps + batcher_hold.
  [[nodiscard]] std::uint64_t steps_in_flight() const noexcept { return in_flight_; }
  /// Makes the actor send actors::allowance_raised to `gate_inbox` when it
  /// raises the allowance to what a waiting gate needs (see
  /// wait_for_allowance and rate_limit_gate.hpp).
  void set_waker(channel<actors::gate_msg>* gate_inbox) noexcept { waker_ = gate_inbox; }
  /// Raises the allowance to `allowance` (if higher) and wakes a gate
  /// waiting for it: how a distributed run's sampler rank, whose actor never
  /// runs, gets its share of the learner's allowance. Any thread.
  void grant(std::uint64_t allowance) noexcept;
  /// The sampling side says it is waiting for the allowance to reach `needed`;
  /// returns true if it already has (then nothing will be sent).
  bool wait_for_allowance(std::uint64_t needed) noexcept;

  /// The limiter: inserts in env steps, samples in sampled units (not while running).
  [[nodiscard]] const rate_limiter& limiter() const noexcept { return limiter_; }

 protected:
  /// A limiter with `config`, and `in_flight` env steps the sampling side
  /// may always have on the way.
  rate_limited_replay(const rate_limiter_config& config, std::uint64_t in_flight);
  ~rate_limited_replay() = default;

  /// Raises the allowance to what the limiter's counts allow now, and, when
  /// `nothing_sampleable`, to at least the inserts plus steps_in_flight():
  /// the learner cannot move then, so the sampling side must.
  void raise_allowance(bool nothing_sampleable) noexcept;
  /// Replaces the limiter's counts (a loaded state).
  void restore_limiter(std::uint64_t inserts, std::uint64_t samples) noexcept;

  rate_limiter limiter_;  ///< the actor records its inserts and samples here

 private:
  rate_limiter_config limiter_config_;
  std::atomic<std::uint64_t> allowance_{0};
  std::atomic<std::uint64_t> wanted_{0};  // the allowance the gate waits for; 0: not waiting
  channel<actors::gate_msg>* waker_ = nullptr;
  std::uint64_t in_flight_;
};

}  // namespace coral::replay
