#pragma once
/// \file
/// A per-channel cache of the pages oneTBB's concurrent_queue allocates.
///
/// The queue takes a page every few dozen items and frees it once drained,
/// so in steady state it would call the heap every few dozen messages. The
/// pool keeps freed pages (of the one page size the queue uses) and hands
/// them back, so a channel in steady state allocates nothing. Not public API.

#include <cstddef>
#include <mutex>
#include <new>
#include <vector>

#include "coral/core/spin_lock.hpp"

namespace coral::detail {

class page_pool {
 public:
  /// Keeps at most `max_cached` free pages; more are returned to the heap.
  explicit page_pool(std::size_t max_cached = 256) { free_.reserve(max_cached); }
  page_pool(const page_pool&) = delete;
  page_pool& operator=(const page_pool&) = delete;
  ~page_pool() {
    for (void* p : free_) ::operator delete(p, alignment);
  }

  void* allocate(std::size_t bytes) {
    {
      std::lock_guard<coral::spin_lock> lock(lock_);
      if (bytes == page_bytes_ && !free_.empty()) {
        void* p = free_.back();
        free_.pop_back();
        return p;
      }
    }
    return ::operator new(bytes, alignment);
  }

  void deallocate(void* p, std::size_t bytes) noexcept {
    {
      std::lock_guard<coral::spin_lock> lock(lock_);
      // The queue's first freed block is a page (its one other block, the
      // representation, lives as long as the queue).
      if (page_bytes_ == 0) page_bytes_ = bytes;
      if (bytes == page_bytes_ && free_.size() < free_.capacity()) {
        free_.push_back(p);  // within the reserved capacity: no allocation
        return;
      }
    }
    ::operator delete(p, alignment);
  }

  static constexpr std::align_val_t alignment{64};  // a cache line, as oneTBB's own allocator

 private:
  coral::spin_lock lock_;
  std::size_t page_bytes_ = 0;
  std::vector<void*> free_;
};

/// The allocator a channel's queue uses: every rebound copy draws on the
/// channel's one page_pool.
template <class T>
class pooled_allocator {
 public:
  using value_type = T;
  explicit pooled_allocator(page_pool& pool) noexcept : pool_(&pool) {}
  template <class U>
  pooled_allocator(const pooled_allocator<U>& other) noexcept : pool_(other.pool()) {}

  T* allocate(std::size_t n) { return static_cast<T*>(pool_->allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { pool_->deallocate(p, n * sizeof(T)); }
  [[nodiscard]] page_pool* pool() const noexcept { return pool_; }

  template <class U>
  bool operator==(const pooled_allocator<U>& other) const noexcept {
    return pool_ == other.pool();
  }

 private:
  page_pool* pool_;
};

}  // namespace coral::detail
