#include "coral/core/executor.hpp"

#include <algorithm>

#include <pthread.h>
#include <sched.h>

#include "coral/core/error.hpp"
#include "coral/core/logging.hpp"

namespace coral {

executor_mode parse_executor_mode(std::string_view text) {
  if (text == "threads") return executor_mode::threads;
  if (text == "single") return executor_mode::single;
  throw config_error(
      fmt::format(fmt::runtime(errors::bad_value), "--executor", text, "threads, single"));
}

bool pin_current_thread(std::size_t core) noexcept {
  const auto cores = std::thread::hardware_concurrency();
  if (cores == 0 || core >= cores || core >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

void run_with_spin(asio::io_context& context, std::chrono::microseconds spin) {
  if (spin.count() <= 0) {
    context.run();
    return;
  }
  using clock = std::chrono::steady_clock;
  // Between empty polls the thread pauses, twice as long each time up to
  // max_pauses (about 1 us), back to one after any work: every poll takes
  // the io_context's lock, which the threads that post work need too, so an
  // idle thread polling flat out slows the busy ones it waits for.
  constexpr int max_pauses = 64;
  int pauses = 1;
  auto last_work = clock::now();
  while (!context.stopped()) {
    if (context.poll() > 0) {
      last_work = clock::now();
      pauses = 1;
      continue;
    }
    if (clock::now() - last_work < spin) {
#if defined(__x86_64__) || defined(__i386__)
      for (int i = 0; i < pauses; ++i) __builtin_ia32_pause();
#endif
      pauses = std::min(pauses * 2, max_pauses);
      continue;
    }
    if (context.run_one() == 0) break;  // stopped, or out of work
    last_work = clock::now();
    pauses = 1;
  }
}

thread_pool::thread_pool(pool_options options)
    : options_(std::move(options)),
      context_(static_cast<int>(options_.threads == 0 ? 1 : options_.threads)) {
  if (options_.threads == 0) {
    throw config_error(fmt::format(fmt::runtime(errors::zero_threads), options_.name));
  }
}

thread_pool::~thread_pool() {
  if (started_ && !threads_.empty()) {
    log::get("runtime")->warn("thread pool '{}' destroyed without stop()/join()", options_.name);
    stop();
    join();
  }
}

void thread_pool::start() {
  if (started_) throw usage_error("thread_pool::start() called twice on '" + options_.name + "'");
  started_ = true;
  work_.emplace(context_.get_executor());
  const auto cores = std::max(1u, std::thread::hardware_concurrency());
  for (std::size_t i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this, i, cores] {
      const auto name = options_.name.substr(0, 12) + "-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.c_str());
      if (options_.pin && !pin_current_thread((options_.first_core + i) % cores)) {
        log::get("runtime")->warn("could not pin thread {} of pool '{}'", i, options_.name);
      }
      run_with_spin(context_, options_.spin);
    });
  }
}

void thread_pool::stop() noexcept {
  work_.reset();
  context_.stop();
}

void thread_pool::join() noexcept {
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

}  // namespace coral
