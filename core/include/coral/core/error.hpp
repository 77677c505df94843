#pragma once
/// \file
/// coral's one small exception hierarchy and its named error texts.
///
/// A normal end (a closed channel, a finished episode) is a value, never an
/// exception. Exceptions are for faults and misuse. Every message a user can
/// see is built from a constant below, so tests can assert it exactly.

#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace coral {

/// Error texts. Each is a fmt format string; tests assert them exactly.
namespace messages {
/// An actor's coroutine ended with an exception: actor name, what().
inline constexpr std::string_view actor_failed = "actor '{}' failed: {}";
/// Actors still running when the stop deadline passed: comma-separated names.
inline constexpr std::string_view stop_timeout = "actors did not stop within {} ms: {}";
/// A flag or config value outside its allowed values: flag, value, allowed.
inline constexpr std::string_view bad_value = "{}: invalid value '{}' (allowed: {})";
/// Something spawned or configured on a runtime that already ran.
inline constexpr std::string_view runtime_already_ran = "runtime: run() may be called only once";
/// Two actors spawned with the same name.
inline constexpr std::string_view duplicate_actor = "runtime: an actor named '{}' already exists";
/// A pool asked for with a thread count of zero.
inline constexpr std::string_view zero_threads = "executor '{}': thread count must be at least 1";
/// The stall watchdog fired: seconds without progress; a picture of the run follows on the next lines.
inline constexpr std::string_view run_stalled = "run stalled: nothing moved for {} s (--stall-seconds):\n";
/// A channel made with capacity zero.
inline constexpr std::string_view zero_capacity = "channel: capacity must be at least 1";
}  // namespace messages

/// Base of every exception coral throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A bad flag, config key or value, rejected before anything starts.
class config_error : public error {
 public:
  using error::error;
};

/// An actor's coroutine failed; what() is the full report, actor() its name.
class actor_failed : public error {
 public:
  actor_failed(std::string actor, std::string_view what)
      : error(fmt::format(fmt::runtime(messages::actor_failed), actor, what)),
        actor_(std::move(actor)) {}
  /// Name of the actor whose exception stopped the run.
  [[nodiscard]] const std::string& actor() const noexcept { return actor_; }

 private:
  std::string actor_;
};

/// Actors ignored a stop request for longer than the runtime's deadline.
class stop_timeout : public error {
 public:
  using error::error;
};

/// The stall watchdog found no progress for its limit; what() is its report.
class stall_error : public error {
 public:
  using error::error;
};

/// Misuse of an API (calling in the wrong state); a bug in the caller.
class usage_error : public error {
 public:
  using error::error;
};

}  // namespace coral
