#pragma once
/// \file
/// The pages of a channel's oneTBB concurrent_queue, allocated with the
/// channel. Not public API.
///
/// The queue takes a page every few dozen items and frees it once drained.
/// A page it fails to allocate breaks the queue for good: oneTBB marks that
/// part of it invalid, and a later pop there reads through an invalid
/// pointer (a crash, not an exception). So a channel allocates, when it is
/// built, every page its queue can hold at once (queue_pages below), and the
/// queue takes and gives back only those: a send never allocates, and
/// memory that runs out does so when the channel is made, before anything
/// runs. It also keeps a channel in steady state off the heap.

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <new>
#include <vector>

#include <tbb/concurrent_queue.h>
#include <tbb/version.h>

#include "coral/core/spin_lock.hpp"

namespace coral::detail {

class page_pool {
 public:
  /// Allocates `pages` pages of `page_bytes` each (std::bad_alloc if the
  /// memory is not there).
  page_pool(std::size_t page_bytes, std::size_t pages) : page_bytes_(page_bytes) {
    free_.reserve(pages);
    try {
      for (std::size_t i = 0; i < pages; ++i) free_.push_back(::operator new(page_bytes, alignment));
    } catch (...) {
      release_all();
      throw;
    }
  }
  page_pool(const page_pool&) = delete;
  page_pool& operator=(const page_pool&) = delete;
  ~page_pool() { release_all(); }

  void* allocate(std::size_t bytes) {
    if (bytes == page_bytes_) {
      std::lock_guard<coral::spin_lock> lock(lock_);
      if (!free_.empty()) {
        void* p = free_.back();
        free_.pop_back();
        return p;
      }
      ++heap_pages_;
    }
    // Only if the queue holds more pages than queue_pages() allows for, or
    // asks for another size: neither happens with the oneTBB this was
    // written against (the channel tests check heap_pages() stays 0).
    return ::operator new(bytes, alignment);
  }

  void deallocate(void* p, std::size_t bytes) noexcept {
    if (bytes == page_bytes_) {
      std::lock_guard<coral::spin_lock> lock(lock_);
      if (free_.size() < free_.capacity()) {
        free_.push_back(p);  // within the reserved capacity: no allocation
        return;
      }
    }
    ::operator delete(p, alignment);
  }

  /// Pages the queue had to take from the heap because none was free here.
  [[nodiscard]] std::size_t heap_pages() const noexcept {
    std::lock_guard<coral::spin_lock> lock(lock_);
    return heap_pages_;
  }

  static constexpr std::align_val_t alignment{64};  // a cache line, as oneTBB's own allocator

 private:
  void release_all() noexcept {
    for (void* p : free_) ::operator delete(p, alignment);
    free_.clear();
  }

  mutable coral::spin_lock lock_;
  const std::size_t page_bytes_;
  std::size_t heap_pages_ = 0;
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

// What follows reads oneTBB's queue layout (its detail namespace): check it
// again before moving to another oneTBB.
static_assert(TBB_VERSION_MAJOR == 2021, "coral's channel pages are sized for oneTBB 2021's concurrent_queue");

/// oneTBB's concurrent_queue<T> with coral's allocator, as a channel holds it.
template <class T>
using micro_queue_of = tbb::detail::d2::micro_queue<T, pooled_allocator<T>>;

/// Bytes of one page of the queue (the only block it allocates through its
/// allocator; its representation comes from oneTBB's own allocator).
template <class T>
inline constexpr std::size_t queue_page_bytes = sizeof(typename micro_queue_of<T>::padded_page);

/// The most pages a queue of T holds at once when at most `capacity` items
/// are in it or on their way in or out (a channel reserves a slot before the
/// push and releases it after the pop). The queue spreads items round robin
/// over n micro-queues (8); a micro-queue takes a page when a push starts
/// one (every `per_page` of its items) and frees it when the pop of the
/// page's last item ends, and its pushes and pops each go in ticket order.
/// With d of its items pushed or being pushed and not yet popped, from the
/// page where its next pop is, that is at most ceil((per_page - 1 + d) /
/// per_page) <= 1 + ceil(d / per_page) pages; summed over the micro-queues,
/// with the d's adding up to at most `capacity` and at most min(capacity,
/// n) of them non-zero: n + min(capacity, n) + capacity / per_page, rounded up.
template <class T>
constexpr std::size_t queue_pages(std::size_t capacity) noexcept {
  constexpr std::size_t n = tbb::detail::d2::concurrent_queue_rep<T, pooled_allocator<T>>::n_queue;
  constexpr std::size_t per_page = micro_queue_of<T>::items_per_page;
  return n + std::min(capacity, n) + (capacity + per_page - 1) / per_page;
}

}  // namespace coral::detail
