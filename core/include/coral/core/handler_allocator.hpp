#pragma once
/// \file
/// Allocation for Asio's handler blocks without a heap call in steady state.

#include <cstddef>

#include <asio/io_context.hpp>
#include <asio/strand.hpp>

#include "coral/core/handler_block_pool.hpp"

namespace coral {

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
