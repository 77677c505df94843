#pragma once
/// \file
/// Allocation for Asio's handler blocks without a heap call in steady state.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <new>

#include <asio/io_context.hpp>
#include <asio/strand.hpp>

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

/// A process-wide cache of the blocks Asio allocates to queue handlers
/// (wake-ups, strand runs). Asio's own per-thread caches miss when one thread
/// queues what another runs (a batcher waking env groups on other threads);
/// this cache is shared, so a block freed on any thread serves the next
/// allocation anywhere. Blocks of up to 4 sizes are cached, 256 of each.
///
/// Thread safety: allocate() and deallocate() may be called from any thread.
class handler_block_pool {
 public:
  static handler_block_pool& instance() {
    static handler_block_pool pool;
    return pool;
  }
  void* allocate(std::size_t bytes, std::size_t align) {
    if (align <= alignof(std::max_align_t)) {
      std::lock_guard<spin_lock> lock(lock_);
      for (auto& c : classes_) {
        if (c.bytes == bytes && c.count > 0) return c.blocks[--c.count];
      }
    }
    return ::operator new(bytes, std::align_val_t{std::max(align, alignof(std::max_align_t))});
  }
  void deallocate(void* p, std::size_t bytes, std::size_t align) noexcept {
    if (align <= alignof(std::max_align_t)) {
      std::lock_guard<spin_lock> lock(lock_);
      for (auto& c : classes_) {
        if (c.bytes == 0) c.bytes = bytes;
        if (c.bytes == bytes) {
          if (c.count == c.blocks.size()) break;
          c.blocks[c.count++] = p;
          return;
        }
      }
    }
    ::operator delete(p, std::align_val_t{std::max(align, alignof(std::max_align_t))});
  }

 private:
  struct size_class {
    std::size_t bytes = 0;
    std::size_t count = 0;
    std::array<void*, 256> blocks{};
  };
  spin_lock lock_;
  std::array<size_class, 4> classes_{};
};

/// An allocator drawing on handler_block_pool: bound to channel wake-ups and
/// required on every executor the runtime gives its actors.
template <class T>
struct handler_allocator {
  using value_type = T;
  handler_allocator() noexcept = default;
  template <class U>
  handler_allocator(const handler_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(handler_block_pool::instance().allocate(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    handler_block_pool::instance().deallocate(p, n * sizeof(T), alignof(T));
  }
  template <class U>
  bool operator==(const handler_allocator<U>&) const noexcept {
    return true;
  }
};

/// The executor of an actor on a pool of one thread (or in single mode).
using actor_io_executor = asio::io_context::basic_executor_type<handler_allocator<void>, 0>;
/// The executor of an actor on a pool of several threads.
using actor_strand = asio::strand<actor_io_executor>;

}  // namespace coral
