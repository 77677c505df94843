#pragma once
/// \file
/// Executors: named pools of threads, each running one asio::io_context.
///
/// A pool is where actors run. The runtime owns its pools; a user asks it for
/// one by name (`sampling`, `learner`, `replay`). With the single-threaded
/// mode every pool name maps to one io_context run by the caller's thread.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

namespace coral {

/// How a runtime maps pools onto threads.
enum class executor_mode {
  threads,  ///< every pool has its own threads
  single,   ///< every actor runs on one io_context, on the thread calling run()
};

/// `threads` or `single`, as `--executor` takes it.
[[nodiscard]] constexpr std::string_view to_string(executor_mode mode) noexcept {
  return mode == executor_mode::single ? "single" : "threads";
}

/// Parses `threads` or `single`; throws config_error naming `--executor`.
[[nodiscard]] executor_mode parse_executor_mode(std::string_view text);

/// Options of one thread pool.
struct pool_options {
  std::string name;          ///< shown in logs and thread names
  std::size_t threads = 1;   ///< at least 1
  bool pin = false;          ///< pin thread i to core (first_core + i) mod cores
  std::size_t first_core = 0;
  /// How long an idle thread polls for work before it blocks in the kernel.
  /// Zero blocks at once (no CPU burnt while idle). A few tens of microseconds
  /// turn a cross-thread wake-up from an OS round trip (~10-30 us on a VM)
  /// into a cache-line transfer, at the price of spinning while idle.
  std::chrono::microseconds spin{0};
};

/// N threads running one io_context.
///
/// Protocol: construct, start(), ..., stop(), join(). The destructor stops
/// and joins if that was not done (and logs that it had to).
///
/// Thread safety: get_executor() and stop() may be called from any thread;
/// start() and join() from the owning thread only, and not from a pool thread.
class thread_pool {
 public:
  /// Throws config_error if options.threads is 0.
  explicit thread_pool(pool_options options);
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;
  ~thread_pool();

  /// Launches the threads. They run until stop(), even with no work queued.
  void start();
  /// Asks the threads to finish: queued handlers are abandoned, run() returns.
  void stop() noexcept;
  /// Waits for every thread to return. Idempotent.
  void join() noexcept;

  /// The executor of this pool's io_context.
  [[nodiscard]] asio::io_context::executor_type get_executor() noexcept {
    return context_.get_executor();
  }
  /// The io_context itself (for tests that drive it by hand).
  [[nodiscard]] asio::io_context& context() noexcept { return context_; }
  [[nodiscard]] const pool_options& options() const noexcept { return options_; }

 private:
  pool_options options_;
  asio::io_context context_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  bool started_ = false;
};

/// Runs `context` on the calling thread until it is stopped or runs out of
/// work, polling for up to `spin` after the last handler before blocking.
void run_with_spin(asio::io_context& context, std::chrono::microseconds spin);

/// Pins the calling thread to one core. Returns false (and changes nothing)
/// if the core does not exist or the system refuses.
bool pin_current_thread(std::size_t core) noexcept;

}  // namespace coral
