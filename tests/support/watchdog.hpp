#pragma once
/// \file
/// Test support: a watchdog that ends the test process (failing it) if a
/// scope takes longer than its limit, so a bug shows as a failure, never as a
/// hang. It waits on the event (its own destruction), it never sleeps.

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace coral::test {

class watchdog {
 public:
  watchdog(std::string what, std::chrono::milliseconds limit)
      : what_(std::move(what)), thread_([this, limit] {
          std::unique_lock lock(mutex_);
          if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "watchdog: '%s' did not finish within %lld ms\n", what_.c_str(),
                         static_cast<long long>(limit.count()));
            std::_Exit(3);
          }
        }) {}
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;
  ~watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace coral::test
