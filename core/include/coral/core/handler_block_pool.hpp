#pragma once
/// \file
/// A process-wide cache of Asio handler blocks, shared by every thread.

#include <algorithm>
#include <array>
#include <cstddef>
#include <mutex>
#include <new>

#include "coral/core/spin_lock.hpp"

namespace coral {

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

}  // namespace coral
