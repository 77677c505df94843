#pragma once
/// \file
/// The env group actor: K envs stepped back to back, one message per step.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <asio/awaitable.hpp>
#include <spdlog/logger.h>

#include "coral/actors/env_error_policy.hpp"
#include "coral/actors/messages.hpp"
#include "coral/channels/channel.hpp"
#include "coral/envs/env_slice.hpp"

namespace coral::actors {

/// Owns an env_slice (K envs over a contiguous block of batch rows).
///
/// run(): resets every env and announces ready; then, for each token received
/// on actions(), steps every env once (the actions are in its rows) and
/// announces ready again. It ends when actions() is closed, or when the ready
/// channel is closed. An env that throws ends the actor with
/// `env <i> in group '<name>' failed: <what>` (policy fail), or is reset and
/// counted (policy reset; its rows then show truncated = 1 and the first
/// observation of a new episode).
///
/// Thread safety: run() is one coroutine; env_failures() may be read from any thread.
/// Failure lines (errors::env_reset) a run logs under the reset policy; the
/// rest are counted (env_group::env_failures, the final line's
/// env_failures), not logged: a run whose every step fails once wrote
/// 32,000 lines in under 2 s.
inline constexpr std::uint64_t max_logged_env_failures = 20;

/// The failure lines a run has logged, shared by its groups: the lines and
/// the last one's note that the rest are counted are written under its
/// mutex, so that the note comes last (a line claimed by one group could be
/// written after another group's note).
struct env_failure_log {
  std::mutex mutex;
  std::uint64_t logged = 0;
};

class alignas(64) env_group {
 public:
  /// `first_env` is the global index of the slice's first env (for messages).
  env_group(std::string name, std::uint32_t id, std::size_t first_env, envs::env_slice slice,
            channel<ready_msg>& ready, env_error_policy on_error);

  /// The actor's body.
  [[nodiscard]] asio::awaitable<void> run();

  /// Where the batcher sends "your actions are written" tokens (capacity 1).
  [[nodiscard]] channel<std::uint64_t>& actions() noexcept { return actions_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] std::uint32_t id() const noexcept { return id_; }
  /// The batch rows this group owns.
  [[nodiscard]] row_range rows() const noexcept;
  /// Number of envs in the group.
  [[nodiscard]] std::size_t size() const noexcept { return slice_.size(); }
  /// Sends ready announcements to a gate's inbox instead (see gate.hpp).
  /// Before run() only.
  void announce_to(channel<gate_msg>& gate_inbox) noexcept { gate_ = &gate_inbox; }
  /// The group's envs.
  [[nodiscard]] const envs::env_slice& slice() const noexcept { return slice_; }
  /// Counts the failures this group logs against `logged`, shared by the
  /// run's groups, so that a run logs at most max_logged_env_failures
  /// (see there). Before run() only.
  void share_failure_log(env_failure_log& log) noexcept { failure_log_ = &log; }
  /// Env failures survived under the reset policy.
  [[nodiscard]] std::uint64_t env_failures() const noexcept { return failures_.load(std::memory_order_relaxed); }
  /// Steps the group has completed (a snapshot; any thread).
  [[nodiscard]] std::uint64_t steps() const noexcept { return steps_.load(std::memory_order_relaxed); }
  /// Where the group is now, for the stall watchdog (a snapshot; any thread):
  /// starting, in its envs' code, waiting to announce, waiting for its
  /// actions, or finished.
  [[nodiscard]] std::string_view where() const noexcept;
  /// Whether the group is in its envs' code now (resetting or stepping
  /// them) rather than waiting on a channel or finished: what the live view
  /// samples for its busy fraction (a snapshot; any thread).
  [[nodiscard]] bool busy() const noexcept {
    const auto p = phase_.load(std::memory_order_relaxed);
    return p == phase::starting || p == phase::stepping;
  }

 private:
  void step();
  /// The first reset of every env, under the error policy.
  void reset_all();
  /// Applies the error policy to a failed env: throws under `fail`; under
  /// `reset` counts, logs and recovers it.
  void handle_failure(const envs::env_failed& e);
  /// Resets env i after it failed and marks its rows failed; throws if the reset fails too.
  void recover(std::size_t i);

  std::string name_;
  std::uint32_t id_;
  std::size_t first_env_;
  envs::env_slice slice_;
  channel<ready_msg>* ready_;
  channel<gate_msg>* gate_ = nullptr;  // announcements go here instead, when set
  channel<std::uint64_t> actions_{1};
  env_error_policy on_error_;
  std::atomic<std::uint64_t> failures_{0};
  std::vector<std::uint64_t> failures_by_env_;  // the run() coroutine's own
  env_failure_log own_failure_log_;
  env_failure_log* failure_log_ = &own_failure_log_;
  std::atomic<std::uint64_t> steps_{0};
  enum class phase : std::uint8_t { starting, stepping, announcing, waiting, finished };
  std::atomic<phase> phase_{phase::starting};
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace coral::actors
