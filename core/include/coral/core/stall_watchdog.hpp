#pragma once
/// \file
/// The stall watchdog: an actor that ends a run in which nothing moves.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <asio/awaitable.hpp>

namespace coral {

class runtime;

/// Watches progress counters (env steps, learner updates, ...). When none of
/// them changed for `limit`, it throws stall_error from its actor, so the
/// runtime stops the run and reports `actor 'stall-watchdog' failed: run
/// stalled: ...` with a picture of the run: every counter with how long ago
/// it last moved, then the lines every describer adds (which actors wait on
/// which channel, each channel's depth, ...).
///
/// Protocol: watch() and describe() before run(); run() is the actor's body
/// (spawn it on a pool of its own, so a stalled sampling thread cannot hold
/// it back). It checks every min(limit / 10, 1 s) and never ends by itself:
/// a stop cancels it.
///
/// Thread safety: the counters and describers are called on the watchdog's
/// executor; they must be safe to call from there while the run goes on
/// (atomics, channel snapshots).
class stall_watchdog {
 public:
  /// A watchdog that fires after `limit` without progress; a limit of 0
  /// turns it off (spawn() then starts nothing).
  explicit stall_watchdog(std::chrono::milliseconds limit);

  /// `--stall-seconds` as a limit: 0 stays 0 (off), anything else is at least 1 ms.
  [[nodiscard]] static std::chrono::milliseconds limit_of(double seconds);

  /// Spawns run() on `rt` as the daemon actor `stall-watchdog`, on a pool
  /// `watchdog` of its own, unless the watchdog is off.
  void spawn(runtime& rt);

  /// Adds a counter that moves when the run makes progress.
  void watch(std::string name, std::function<std::uint64_t()> counter);
  /// Adds a describer: it appends lines (each ending in '\n') to its argument.
  void describe(std::function<void(std::string&)> describer);

  /// The report as run() would throw it now (for tests and for logs).
  [[nodiscard]] std::string report() const;

  /// The actor's body.
  [[nodiscard]] asio::awaitable<void> run();

 private:
  struct counter {
    std::string name;
    std::function<std::uint64_t()> read;
    std::uint64_t last = 0;
    std::chrono::steady_clock::time_point changed;
  };
  std::chrono::milliseconds limit_;
  std::vector<counter> counters_;
  std::vector<std::function<void(std::string&)>> describers_;
};

}  // namespace coral
