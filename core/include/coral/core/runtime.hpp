#pragma once
/// \file
/// The runtime: owns the executors, spawns named actors, and runs them until
/// every one has finished, stopping all of them on the first failure, on a
/// signal, or on request.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/co_spawn.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/io_context.hpp>

#include "coral/core/executor.hpp"

namespace coral {

/// Options of a runtime.
struct runtime_options {
  executor_mode mode = executor_mode::threads;
  /// Turn SIGINT, SIGTERM and SIGHUP into request_stop() while run() runs (through
  /// an interrupt_scope: a second signal ends the process at once). A signal
  /// that arrived before run() under another live interrupt_scope stops the
  /// run as soon as it starts.
  bool handle_signals = false;
  /// How long actors may take to finish after a stop before the runtime
  /// abandons them and run() throws stop_timeout.
  std::chrono::milliseconds stop_deadline{1000};
  /// Called on the thread that called run(), with the stop_timeout message,
  /// the moment stop_deadline passes with actors still running, before any
  /// thread is joined. An actor stuck in code that never yields (an env
  /// step of minutes) keeps its thread, and run() must join that thread
  /// before it can throw; a program that cannot wait ends itself here
  /// (print, then std::_Exit). If it returns, run() goes on as described.
  std::function<void(const std::string&)> on_stop_timeout = {};
  /// Asked on the thread that called run() each time stop_deadline passes
  /// with actors still running, before on_stop_timeout: true gives them
  /// another stop_deadline. For an actor known to be finishing rather than
  /// stuck (a learner in the middle of a long update step); the function
  /// bounds the wait itself. Empty: never.
  std::function<bool()> keep_waiting = {};
};

/// What an actor awaits, which decides how the runtime runs it on a pool of
/// several threads (see runtime::spawn).
enum class actor_waits {
  /// Anything Asio offers (timers, awaitable operators, several operations
  /// at once). The actor gets a strand, and a stop emits terminal
  /// cancellation to it.
  anything,
  /// Only coral channel operations (channels/channel.hpp), one at a time,
  /// and no timed receive: its coroutine never has two handlers queued at
  /// once, so it needs no strand. Every hand-off to it costs one post to the
  /// pool instead of a strand's two locks and its invoker (noop 8/4/2 at the
  /// defaults: 1.42-1.50x, BENCHMARKS.md). A stop emits no cancellation to it (the emit would run
  /// beside the coroutine, on another thread): it must end when the channels
  /// it waits on close, so close them in an on_stop() callback. The stop
  /// deadline bounds it like any actor. Its coroutine has no cancellation
  /// slot connected.
  channels_only,
};

/// Spawns actors and runs them to the end.
///
/// An actor is an `asio::awaitable<void>` with a name, running on an
/// executor from pool(). When an actor throws, the runtime records
/// `actor '<name>' failed: <what>` and stops every other actor: it calls the
/// on_stop() callbacks (which close channels, so receivers see "closed"), and
/// emits terminal cancellation to each actor still running (except those
/// spawned actor_waits::channels_only, which the closed channels end), so a
/// pending wait ends with asio::error::operation_aborted. Exceptions of that
/// kind after a stop count as a clean end. If actors are still running stop_deadline after
/// the stop, their executors are stopped and run() throws stop_timeout: no
/// path hangs.
///
/// Protocol: pool() and spawn() (also from running actors), then run() once.
/// The destructor joins every thread the runtime started.
///
/// Thread safety: spawn(), on_stop(), request_stop() and stop_requested() may
/// be called from any thread, including actors; run() from one thread only.
class runtime {
 public:
  explicit runtime(runtime_options options = {});
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;
  ~runtime();

  /// The executor of pool `name`, created with `threads` threads on first
  /// use (later calls return the same pool and ignore the other arguments).
  /// In single mode every name maps to the one io_context run by run().
  [[nodiscard]] asio::any_io_executor pool(const std::string& name, std::size_t threads = 1,
                                           bool pin = false, std::size_t first_core = 0);
  /// The same, with every pool option (spin, ...).
  [[nodiscard]] asio::any_io_executor pool(pool_options options);

  /// Starts actor `name` running the coroutine `body()` on `executor` (an
  /// executor from pool(); on a pool of several threads the actor gets its
  /// own strand, so its code never runs on two threads at once). The function
  /// object is kept alive until the coroutine ends, so a lambda coroutine may
  /// capture by reference: pass the lambda, do not call it. Names must be
  /// unique (usage_error otherwise). `waits` says what the actor awaits:
  /// see actor_waits.
  template <class Body>
    requires std::is_invocable_r_v<asio::awaitable<void>, Body&>
  void spawn(std::string name, asio::any_io_executor executor, Body&& body,
             actor_waits waits = actor_waits::anything);

  /// Starts actor `name` running an already-created coroutine. Use this form
  /// for coroutine functions whose parameters hold what they use; for lambda
  /// coroutines use the form above (a called lambda's captures would dangle).
  void spawn(std::string name, asio::any_io_executor executor, asio::awaitable<void> body,
             actor_waits waits = actor_waits::anything);

  /// Starts a daemon actor: one that serves the others (a progress printer,
  /// a watchdog) and does not keep the run going. Once every other actor has
  /// finished, daemons still running are cancelled (terminal cancellation;
  /// the operation_aborted they end with counts as a clean end) and run()
  /// returns when they have finished too. A daemon's failure stops the run
  /// like any actor's.
  void spawn_daemon(std::string name, asio::any_io_executor executor, asio::awaitable<void> body);

  /// Registers `fn` to run once, on the thread that processes the stop, when
  /// a stop begins (typically closing a channel). Called immediately if the
  /// stop already began.
  void on_stop(std::function<void()> fn);

  /// Registers `c.close()` as a stop callback. `c` must outlive the runtime's run().
  template <class Closable>
  void close_on_stop(Closable& c) {
    on_stop([&c] { c.close(); });
  }

  /// Asks every actor to stop (see the class comment). Thread safe, idempotent.
  void request_stop() noexcept;
  /// True once a stop was requested, by a failure, a signal or a call.
  [[nodiscard]] bool stop_requested() const noexcept {
    return stop_requested_.load(std::memory_order_acquire);
  }

  /// Runs every actor until all have finished. Returns normally when all
  /// ended without error (also after a requested stop); throws actor_failed
  /// for the first actor that failed, or stop_timeout.
  void run();

  /// Whether actor `name` was spawned and has ended (any thread).
  [[nodiscard]] bool finished(std::string_view name) const;
  /// The names of the actors spawned so far, in spawn order (any thread).
  [[nodiscard]] std::vector<std::string> actor_names() const;

  /// The mode this runtime was built with.
  [[nodiscard]] executor_mode mode() const noexcept { return options_.mode; }

 private:
  struct actor_record {
    std::string name;
    asio::any_io_executor executor;
    asio::cancellation_signal cancel;
    std::atomic<bool> done{false};
    bool daemon = false;
    /// actor_waits::channels_only: no strand, and no cancellation emitted.
    bool channels_only = false;
  };

  actor_record* add_actor(std::string name, asio::any_io_executor executor, bool daemon = false,
                          actor_waits waits = actor_waits::anything);
  /// Emits terminal cancellation to `actor` on its own executor, unless it
  /// is done or waits on channels only.
  void post_cancel(actor_record* actor);
  /// Without a cancellation slot, for channels-only actors: none is ever
  /// emitted to them, and an unconnected slot spares each channel wait the
  /// installing of a cancellation handler (and an abandoned coroutine's
  /// teardown a handler to disarm).
  auto done_handler(actor_record* actor) {
    return [this, actor](std::exception_ptr e) { on_actor_done(*actor, std::move(e)); };
  }
  auto completion(actor_record* actor) {
    return asio::bind_cancellation_slot(actor->cancel.slot(), done_handler(actor));
  }
  /// co_spawn of `body` for `actor`, with the completion its kind takes.
  template <class Body>
  void start(actor_record* actor, Body&& body) {
    if (actor->channels_only) {
      asio::co_spawn(actor->executor, std::forward<Body>(body), done_handler(actor));
    } else {
      asio::co_spawn(actor->executor, std::forward<Body>(body), completion(actor));
    }
  }
  void after_spawn(actor_record* actor);
  void on_actor_done(actor_record& actor, std::exception_ptr error);
  void begin_stop();
  void finish_if_done();
  /// Names of the actors still running, comma-separated.
  [[nodiscard]] std::string stuck_actors() const;
  /// errors::stop_timeout for `names` (default: the actors running now).
  [[nodiscard]] std::string stop_timeout_text(std::string names = {}) const;

  runtime_options options_;
  asio::io_context control_;  ///< runs on the caller of run(); in single mode, every actor too
  std::map<std::string, std::unique_ptr<thread_pool>> pools_;

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<actor_record>> actors_;
  std::unordered_set<std::string> names_;  ///< of every actor spawned, for uniqueness
  std::vector<std::function<void()>> stop_callbacks_;
  std::size_t running_ = 0;          ///< actors running, daemons not counted
  std::size_t daemons_running_ = 0;
  bool daemons_cancelled_ = false;
  std::string failed_actor_;   ///< name of the first actor that failed, empty if none
  std::string failure_what_;   ///< its exception's what()
  bool stop_began_ = false;
  bool ran_ = false;
  std::atomic<bool> stop_requested_{false};
};

// Defined after the class: completion() returns a deduced type, which clang
// needs to have seen in full before a member template body uses it.
template <class Body>
  requires std::is_invocable_r_v<asio::awaitable<void>, Body&>
void runtime::spawn(std::string name, asio::any_io_executor executor, Body&& body, actor_waits waits) {
  auto* actor = add_actor(std::move(name), std::move(executor), false, waits);
  start(actor, std::forward<Body>(body));
  after_spawn(actor);
}

}  // namespace coral
