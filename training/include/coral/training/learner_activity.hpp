#pragma once
/// \file
/// What the learner is doing right now, told by the learner as it goes and
/// read by the run's stall watchdog, its stop and its reports: a busy learner
/// is not a stuck one.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace coral::training {

/// A learner's updates as they happen. The learner calls begin() when an
/// update starts, step() after each of its steps (a PPO minibatch, a DQN or
/// R2D2 batch) and end() when it is done; the run reads the rest from
/// other threads.
///
/// - The stall watchdog counts steps as progress (an update of minutes is
///   busy, not stalled) but not update after update while env steps stand
///   still (training forever on the same data is a stall): see
///   training_run.
/// - A stop: step() returns false once stop() was called, and the update
///   ends at that step (its state is whole: the parameters and the
///   optimiser's moments of the steps taken), so a stop never waits out the
///   rest of a long update, and the final checkpoint has it. While a step
///   is running, the run's stop waits for it (busy()).
///
/// Thread safety: begin(), step() and end() from the learner's actor, one
/// at a time; everything else from any thread.
class learner_activity {
 public:
  /// Update `update` (1 for the first) starts, with `planned` steps (0: not known).
  void begin(std::uint64_t update, std::uint64_t planned) noexcept;
  /// One step of the update is done. False once the run is stopping: end
  /// the update now.
  [[nodiscard]] bool step() noexcept;
  /// The update is done (also after step() said stop).
  void end() noexcept;

  /// The run is stopping (any thread).
  void stop() noexcept { stopping_.store(true, std::memory_order_release); }
  [[nodiscard]] bool stopping() const noexcept { return stopping_.load(std::memory_order_acquire); }

  /// Steps done, over every update.
  [[nodiscard]] std::uint64_t steps() const noexcept { return steps_.load(std::memory_order_acquire); }
  /// Updates begun.
  [[nodiscard]] std::uint64_t begun() const noexcept { return begun_.load(std::memory_order_acquire); }
  /// Inside an update.
  [[nodiscard]] bool busy() const noexcept { return busy_.load(std::memory_order_acquire); }
  /// Seconds since the current update's last step (or its start), 0 when idle.
  [[nodiscard]] double seconds_in_step() const noexcept;

  /// One line for a report: "learner: in update 47 for 41.2 s, step 300 of
  /// 3840 (the last 0.01 s ago)", or "learner: between updates (update 46
  /// ended 3.1 s ago)".
  [[nodiscard]] std::string describe() const;

 private:
  using clock = std::chrono::steady_clock;
  static std::int64_t now_ns() noexcept;

  std::atomic<bool> stopping_{false};
  std::atomic<bool> busy_{false};
  std::atomic<std::uint64_t> steps_{0};
  std::atomic<std::uint64_t> begun_{0};
  std::atomic<std::uint64_t> update_{0};
  std::atomic<std::uint64_t> planned_{0};
  std::atomic<std::uint64_t> step_in_update_{0};
  std::atomic<std::int64_t> began_ns_{0};
  std::atomic<std::int64_t> last_step_ns_{0};
  std::atomic<std::int64_t> ended_ns_{0};
};

}  // namespace coral::training
