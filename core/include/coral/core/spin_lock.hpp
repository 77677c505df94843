#pragma once
/// \file
/// A spin lock for critical sections of a few pointer writes.

#include <atomic>

namespace coral {

/// A test-and-test-and-set spin lock: the critical sections it guards are a
/// few pointer writes, far shorter than a futex round trip.
class spin_lock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace coral
