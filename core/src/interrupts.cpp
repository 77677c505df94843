#include "coral/core/interrupts.hpp"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

namespace coral {
namespace {

struct callbacks {
  std::function<void()> on_first;
  std::function<void()> on_second;
};

std::atomic<int> count{0};  // signals since the first live scope
int pipe_fds[2] = {-1, -1};

extern "C" void on_signal(int signo) {
  const int saved_errno = errno;
  count.fetch_add(1, std::memory_order_acq_rel);
  const auto byte = static_cast<unsigned char>(signo);
  // A full pipe drops the byte: the count already says a signal came.
  [[maybe_unused]] const auto n = ::write(pipe_fds[1], &byte, 1);
  errno = saved_errno;
}

/// SIGINT, SIGTERM and SIGHUP: the signals that ask for a stop.
sigset_t stop_signals() noexcept {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

/// The registry of scopes and the watcher thread. Leaked on purpose: a
/// signal may arrive while static objects are being destroyed at exit.
class registry {
 public:
  static registry& get() {
    static auto* r = new registry;
    return *r;
  }

  std::uint64_t add(callbacks cb) {
    std::lock_guard lock(mutex_);
    if (scopes_.empty()) install();
    const auto id = next_id_++;
    scopes_.emplace(id, std::move(cb));
    return id;
  }

  void remove(std::uint64_t id) {
    std::lock_guard lock(mutex_);  // waits for a callback that is running
    scopes_.erase(id);
    if (scopes_.empty()) uninstall();
  }

 private:
  registry() {
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) std::abort();
    ::fcntl(pipe_fds[1], F_SETFL, O_NONBLOCK);
    std::thread([this] { watch(); }).detach();
  }

  void install() {
    count.store(0, std::memory_order_release);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
    ::sigaction(SIGHUP, &sa, &old_hup_);
    // A program started with them blocked (the `coral` command hands a run
    // to coral-torch so) takes one that is pending now.
    const auto stops = stop_signals();
    ::pthread_sigmask(SIG_UNBLOCK, &stops, nullptr);
  }

  void uninstall() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::sigaction(SIGHUP, &old_hup_, nullptr);
    // The stop they asked for is over: code that runs outside any scope
    // (a later call from Python, the next test) is not interrupted.
    count.store(0, std::memory_order_release);
  }

  void watch() {
    // The handler runs on the threads that use coral, never here: a thread
    // that blocks them before an exec (hand_over_to_torch) then keeps a stop
    // pending for the program it starts.
    const auto stops = stop_signals();
    ::pthread_sigmask(SIG_BLOCK, &stops, nullptr);
    for (;;) {
      unsigned char signo = 0;
      const auto n = ::read(pipe_fds[0], &signo, 1);
      if (n != 1) continue;  // EINTR
      std::lock_guard lock(mutex_);
      if (scopes_.empty()) continue;  // arrived as the last scope ended
      const bool second = count.load(std::memory_order_acquire) >= 2;
      for (auto& [id, cb] : scopes_) {
        auto& fn = second ? cb.on_second : cb.on_first;
        if (fn) fn();
      }
      if (second) {
        std::fflush(nullptr);
        std::_Exit(128 + signo);
      }
    }
  }

  std::mutex mutex_;
  std::map<std::uint64_t, callbacks> scopes_;
  std::uint64_t next_id_ = 1;
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  struct sigaction old_hup_ {};
};

}  // namespace

interrupt_scope::interrupt_scope(std::function<void()> on_first, std::function<void()> on_second)
    : id_(registry::get().add({std::move(on_first), std::move(on_second)})) {}

interrupt_scope::~interrupt_scope() { registry::get().remove(id_); }

bool interrupted() noexcept { return count.load(std::memory_order_acquire) > 0; }

int interrupt_count() noexcept { return count.load(std::memory_order_acquire); }

}  // namespace coral
