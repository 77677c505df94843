#pragma once
/// \file
/// A cache of Asio handler blocks: one per thread, over one shared by every thread.

#include <algorithm>
#include <array>
#include <cstddef>
#include <mutex>
#include <new>

#include "coral/core/spin_lock.hpp"

namespace coral {

/// A cache of the blocks Asio allocates to queue handlers (a strand's
/// wake-ups and runs, posts, timers' completions; a channel wake-up on an
/// io_context's executor queues its waiter instead and takes no block), in
/// two tiers. Each thread keeps up to 64 blocks of each of 4 sizes
/// of its own, taken and given back without a lock: a thread that runs what
/// it queued never touches memory another thread writes. Behind them, a
/// process-wide cache of 256 of each size under a spin lock serves the flows
/// between threads that a thread's own cache cannot: Asio's per-thread
/// caches, and this one, miss when one thread queues what another runs (an
/// actor on a strand woken from another pool), so a block freed on any
/// thread must be able to serve the next allocation anywhere. (When channel
/// wake-ups still took blocks, two sampler shards on two cores with the
/// shared cache alone took its lock on every hop and sampled noop no faster
/// than one.)
///
/// Thread safety: allocate() and deallocate() may be called from any thread,
/// also while the thread exits (its own cache is then emptied and bypassed).
class handler_block_pool {
 public:
  static handler_block_pool& instance() {
    static handler_block_pool pool;
    return pool;
  }
  void* allocate(std::size_t bytes, std::size_t align) {
    if (align <= alignof(std::max_align_t)) {
      if (void* p = local_.take(bytes)) return p;
      std::lock_guard<spin_lock> lock(lock_);
      if (void* p = shared_.take(bytes)) return p;
    }
    return ::operator new(bytes, std::align_val_t{std::max(align, alignof(std::max_align_t))});
  }
  void deallocate(void* p, std::size_t bytes, std::size_t align) noexcept {
    if (align <= alignof(std::max_align_t)) {
      if (local_.put(p, bytes)) {
        if (!local_.flush_registered) register_flush();
        return;
      }
      std::lock_guard<spin_lock> lock(lock_);
      if (shared_.put(p, bytes)) return;
    }
    ::operator delete(p, std::align_val_t{std::max(align, alignof(std::max_align_t))});
  }

 private:
  template <std::size_t Capacity>
  struct size_classes {
    struct size_class {
      std::size_t bytes = 0;
      std::size_t count = 0;
      std::array<void*, Capacity> blocks{};
    };
    std::array<size_class, 4> classes{};
    bool closed = false;           // the owning thread's cache after its exit
    bool flush_registered = false;  // the thread's flusher exists (see register_flush)

    void* take(std::size_t bytes) noexcept {
      for (auto& c : classes) {
        if (c.bytes == bytes && c.count > 0) return c.blocks[--c.count];
      }
      return nullptr;
    }
    /// False if the block has no place here (its class full, or no class left).
    bool put(void* p, std::size_t bytes) noexcept {
      if (closed) return false;
      for (auto& c : classes) {
        if (c.bytes == 0) c.bytes = bytes;
        if (c.bytes == bytes) {
          if (c.count == c.blocks.size()) return false;
          c.blocks[c.count++] = p;
          return true;
        }
      }
      return false;
    }
    /// Frees every block held and takes no more.
    void close() noexcept {
      closed = true;
      for (auto& c : classes) {
        while (c.count > 0) {
          ::operator delete(c.blocks[--c.count], std::align_val_t{alignof(std::max_align_t)});
        }
      }
    }
  };

  /// Empties the thread's cache when the thread exits. The cache itself is
  /// trivially destructible, so it stays usable (closed) by code that runs
  /// after this destructor on the same thread.
  struct flusher {
    ~flusher() { local_.close(); }
  };
  static void register_flush() noexcept {
    local_.flush_registered = true;
    static thread_local flusher on_exit;
    (void)on_exit;
  }

  static thread_local size_classes<64> local_;
  spin_lock lock_;
  size_classes<256> shared_;
};

inline thread_local handler_block_pool::size_classes<64> handler_block_pool::local_{};

}  // namespace coral
