#pragma once
/// \file
/// Process-wide handling of SIGINT, SIGTERM and SIGHUP (a closed terminal):
/// the first signal asks for a graceful stop, a second one ends the process
/// at once.

#include <cstdint>
#include <functional>

namespace coral {

/// While at least one interrupt_scope is alive, SIGINT, SIGTERM and SIGHUP
/// are caught for the whole process:
/// - the first signal calls every live scope's `on_first` (typically a
///   runtime's request_stop(), or setting a flag a loop checks), and
///   interrupted() becomes true;
/// - a further signal calls every live scope's `on_second` (print what was
///   measured so far), flushes the C streams and ends the process at once
///   with exit code 128 + the signal number, whatever else is running.
///
/// The signal handler itself only counts and writes one byte to a pipe (both
/// async-signal-safe); the callbacks run on a watcher thread that the first
/// scope starts and that lives until the process ends. When the last scope
/// ends, the previous dispositions of the three signals are restored and the
/// count is zero again.
///
/// Thread safety: scopes may be created and destroyed on any thread. A
/// callback runs on the watcher thread, never inside the signal handler, and
/// never after its scope's destructor returned; the destructor waits for a
/// callback of its own that is running.
class interrupt_scope {
 public:
  explicit interrupt_scope(std::function<void()> on_first, std::function<void()> on_second = {});
  interrupt_scope(const interrupt_scope&) = delete;
  interrupt_scope& operator=(const interrupt_scope&) = delete;
  ~interrupt_scope();

 private:
  std::uint64_t id_;
};

/// True once SIGINT, SIGTERM or SIGHUP arrived while the current scopes were
/// alive; false again once the last of them ends.
[[nodiscard]] bool interrupted() noexcept;

/// How many of those signals arrived (0, 1, or more).
[[nodiscard]] int interrupt_count() noexcept;

}  // namespace coral
