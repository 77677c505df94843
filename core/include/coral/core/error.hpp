#pragma once
/// \file
/// coral's one small exception hierarchy (its error texts: errors.hpp).
///
/// A normal end (a closed channel, a finished episode) is a value, never an
/// exception. Exceptions are for faults and misuse. Every message a user can
/// see is built from a constant below, so tests can assert it exactly.

#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "coral/core/errors.hpp"

namespace coral {


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
      : error(fmt::format(fmt::runtime(errors::actor_failed), actor, what)),
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
