#include "coral/replay/rate_limited_replay.hpp"

#include <algorithm>
#include <limits>

namespace coral::replay {

rate_limited_replay::rate_limited_replay(const rate_limiter_config& config, std::uint64_t in_flight)
    : limiter_(config), limiter_config_(config), in_flight_(in_flight) {}

bool rate_limited_replay::wait_for_allowance(std::uint64_t needed) noexcept {
  wanted_.store(needed);
  if (allowance_.load() < needed) return false;
  wanted_.store(0);
  return true;
}

void rate_limited_replay::restore_limiter(std::uint64_t inserts, std::uint64_t samples) noexcept {
  limiter_ = rate_limiter(limiter_config_);
  limiter_.record_insert(inserts);
  limiter_.record_sample(samples);
}

// Why one side can always move. Write I for the env steps inserted (the
// limiter's count), S for the units sampled (transitions, or a sequence's
// trained steps or the sequences: the actor's ratio_counts), F for the env
// steps the gate let through, A for the allowance (F <= A), k =
// max_group_steps, h = batcher_hold, m = max(min_size, 1), r =
// samples_per_insert, b = the units of one batch and e = error_buffer =
// b + (k + h) r, so the limiter's window is [r m − e, r m + e]. The gate
// lets the group at the front through when F + k <= A; the actor serves a
// waiting request when the replay holds something sampleable, I >= m and
// I r − S − b >= r m − e.
//
// Take a state where nothing is on the way: every env step let through was
// either inserted or is kept by the batcher waiting for a full batch (at
// most h, batcher_hold()), the learner holds no batch (it hands each one
// back) and the inbox is empty. Suppose neither side can move.
// - Nothing sampleable: the last insert set A >= I + k + h (the floor
//   below), so F + k > A gives F − I > h: more than h steps on the way.
// - I < m: then no sample was ever served (the count only grows), S = 0 and
//   A >= floor((r m + e) / r) >= m + k + h, so F − I > m + h − I > h.
// - Otherwise the window refuses the batch: S > I r − b − r m + e, and
//   A >= floor((S + r m + e) / r) > I + (2e − b) / r − 1
//          = I + b / r + 2 (k + h) − 1,
//   so F > A − k > I + 2h + k − 1 + b / r >= I + h.
// Each case contradicts "at most h on the way": one side can always move.
// A batcher that acts on every group at once (h = 0) and the first inserts
// (nothing sampleable for the first 2 n + 1 steps of a transition stream: a
// transition completes when the one n steps later is written; none for the
// first sequence's worth of steps of a sequence stream) were where it failed
// before: with a small min_size the window closed before anything was
// sampleable, and neither side ever moved again.
void rate_limited_replay::raise_allowance(bool nothing_sampleable) noexcept {
  // inserts × ratio − samples <= max_diff  <=>  inserts <= (samples + max_diff) / ratio
  // Both bounds saturate at 2^64 - 1 instead of wrapping (or, for the
  // double, converting out of range: undefined): only counters loaded from a
  // crafted or damaged state get there, and the actor must still run.
  constexpr std::uint64_t most = std::numeric_limits<std::uint64_t>::max();
  constexpr double two_to_64 = 18446744073709551616.0;
  const double allowed =
      (static_cast<double>(limiter_.samples()) + limiter_.max_diff()) / limiter_config_.samples_per_insert;
  auto a = allowed >= two_to_64 ? most : static_cast<std::uint64_t>(std::max(0.0, allowed));
  // Nothing to sample yet: the learner cannot move, so the sampling side must.
  if (nothing_sampleable) {
    const std::uint64_t inserts = limiter_.inserts();
    a = std::max(a, inserts > most - in_flight_ ? most : inserts + in_flight_);
  }
  grant(a);
}

void rate_limited_replay::grant(std::uint64_t a) noexcept {
  a = std::max(a, allowance_.load());
  allowance_.store(a);
  // The gate stores what it waits for, then reads the allowance; we store
  // the allowance, then read what it waits for (both sequentially
  // consistent): one of the two sees the other, so no wake-up is lost. This
  // needs one waiter: the gate asks about its held groups in order and stops
  // at the first it holds (rate_limit_gate::in_order()). Asking about a later
  // group would clear the note of the held one, and its wake-up would be lost.
  std::uint64_t w = wanted_.load();
  if (w != 0 && a >= w && wanted_.compare_exchange_strong(w, 0) && waker_ != nullptr) {
    (void)waker_->try_send(actors::gate_msg(actors::allowance_raised{}));  // full: notes are queued
  }
}

}  // namespace coral::replay
