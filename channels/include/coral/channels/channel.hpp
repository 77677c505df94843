#pragma once
/// \file
/// Channel<T>: the bounded, awaitable, multi-producer multi-consumer queue
/// that actors talk through.

#include <atomic>
#include <chrono>
#include <memory>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>

#include <asio/awaitable.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/multiple_exceptions.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <tbb/concurrent_queue.h>

#include "coral/channels/detail/page_pool.hpp"
#include "coral/channels/detail/waiter.hpp"
#include "coral/core/error.hpp"

namespace coral {

/// Where a coroutine parks in a frame-free wait (channel::wait_for_item,
/// wait_for_room). Declare one just before the wait; after it, call
/// throw_if_aborted().
using channel_waiter = detail::waiter;

/// A bounded MPMC channel of messages of type T.
///
/// Storage is a oneTBB concurrent queue; the capacity is enforced by a
/// separate counter of reserved slots, so try_send() and try_receive() never
/// take a lock. A coroutine that must wait (full on send, empty on receive)
/// parks in a waiter list stored in its own frame (no allocation) and is
/// resumed later by a post to its own executor: an io_context thread never
/// blocks, and producer and consumer may run on different executors.
///
/// Closing is a value, not an exception. close() makes every later send fail
/// (return false); items already buffered, and sends that had reserved a slot
/// before the close, are still delivered; once those are drained, receivers
/// get std::nullopt (or 0 items). close() wakes every parked sender and
/// receiver. A parked operation whose coroutine is cancelled (terminal,
/// partial or total cancellation through its slot, as the runtime does on a
/// stop) ends with asio::system_error(operation_aborted) and takes or gives
/// no item.
///
/// A parked operation does not count as outstanding work on its executor: an
/// io_context whose only work is a parked coroutine returns from run(). The
/// runtime keeps its executors running (work guards) while any actor runs;
/// code that drives an io_context itself must hold a work guard likewise.
///
/// Thread safety: every member function may be called from any thread and any
/// executor at the same time, except the destructor. Destroy a channel only
/// when no coroutine is parked on it (close it and let waiters finish).
///
/// T must be default constructible and nothrow move constructible and
/// assignable: messages are small plain structs.
template <class T>
class alignas(64) channel {
  static_assert(std::is_default_constructible_v<T>, "channel<T>: T must be default constructible");
  static_assert(std::is_nothrow_move_constructible_v<T> && std::is_nothrow_move_assignable_v<T>,
                "channel<T>: T must be nothrow movable");

 public:
  using value_type = T;

  /// A channel that buffers up to `capacity` messages. Throws config_error
  /// if 0 or over max_capacity. Allocates every page
  /// its queue can need (see detail/page_pool.hpp): std::bad_alloc here, or
  /// never.
  explicit channel(std::size_t capacity)
      : capacity_(checked_capacity(capacity)),
        pages_(detail::queue_page_bytes<T>, detail::queue_pages<T>(capacity)),
        queue_(detail::pooled_allocator<T>(pages_)) {}
  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;

  /// Sends without waiting. Returns false, leaving `value` untouched, if the
  /// channel is full or closed.
  [[nodiscard]] bool try_send(T&& value) {
    const auto before = try_reserve();
    if (!before) return false;
    queue_.push(std::move(value));
    if ((*before & receivers_waiting) != 0) receivers_.wake_one();
    return true;
  }
  /// Copying form of try_send.
  [[nodiscard]] bool try_send(const T& value) {
    T copy(value);
    return try_send(std::move(copy));
  }

  /// Receives without waiting: an item, or nullopt if none is buffered now
  /// (whether or not the channel is closed; see is_drained()).
  [[nodiscard]] std::optional<T> try_receive() {
    if (certainly_empty()) return std::nullopt;
    std::optional<T> out(std::in_place);
    if (!queue_.try_pop(*out)) return std::nullopt;
    release(1);
    return out;
  }

  /// Receives up to out.size() buffered items without waiting; returns how
  /// many were written to the front of `out`.
  [[nodiscard]] std::size_t try_receive_some(std::span<T> out) {
    if (certainly_empty()) return 0;
    std::size_t n = 0;
    while (n < out.size() && queue_.try_pop(out[n])) ++n;
    if (n > 0) release(n);
    return n;
  }

  /// Sends, waiting for room if the channel is full. Returns false (the value
  /// is dropped) if the channel is or becomes closed before the send.
  [[nodiscard]] asio::awaitable<bool> async_send(T value) {
    for (;;) {
      if (try_send(std::move(value))) co_return true;
      if (is_closed()) co_return false;
      channel_waiter w;
      co_await wait_for_room(w);
      w.throw_if_aborted();
    }
  }

  /// Receives one item, waiting if none is buffered. Returns nullopt once
  /// the channel is closed and drained.
  [[nodiscard]] asio::awaitable<std::optional<T>> async_receive() {
    for (;;) {
      if (auto v = try_receive()) co_return v;
      if (is_drained()) co_return std::nullopt;
      channel_waiter w;
      co_await wait_for_item(w);
      w.throw_if_aborted();
    }
  }

  /// Receives between 1 and out.size() items, waiting until at least one is
  /// buffered. Returns 0 only once the channel is closed and drained (or if
  /// `out` is empty).
  [[nodiscard]] asio::awaitable<std::size_t> async_receive_some(std::span<T> out) {
    if (out.empty()) co_return 0;
    for (;;) {
      if (auto n = try_receive_some(out)) co_return n;
      if (is_drained()) co_return 0;
      channel_waiter w;
      co_await wait_for_item(w);
      w.throw_if_aborted();
    }
  }

  /// Receives between 1 and out.size() items, waiting until at least one is
  /// buffered or `deadline` passes. Returns the number received: 0 when the
  /// deadline passed with nothing buffered, or once the channel is closed and
  /// drained (is_drained() tells the two apart), or if `out` is empty.
  ///
  /// Cancellation-safe: the wait itself takes no item. Items are popped only
  /// by this coroutine after it resumed, so when the timer and a sender's
  /// wake-up fire in the same turn, whichever wins, every item is either in
  /// `out` or still buffered for the next receive. (Racing
  /// async_receive_some() against a timer with `||` is not safe: a receive
  /// that was already woken cannot be cancelled, and the items it then pops
  /// are discarded with its result.)
  [[nodiscard]] asio::awaitable<std::size_t> async_receive_some_until(
      std::span<T> out, std::chrono::steady_clock::time_point deadline) {
    using namespace asio::experimental::awaitable_operators;
    if (out.empty()) co_return 0;
    if (auto n = try_receive_some(out)) co_return n;
    const auto executor = co_await asio::this_coro::executor;
    asio::steady_timer timer(executor, deadline);
    for (;;) {
      if (auto n = try_receive_some(out)) co_return n;
      if (is_drained()) co_return 0;
      if (std::chrono::steady_clock::now() >= deadline) co_return 0;
      // Either branch may win; the loser is cancelled and waited for. When
      // both end with an error (the caller was cancelled), rethrow the first:
      // operation_aborted, as every other wait here ends when cancelled.
      try {
        co_await (item_or_drained() || timer.async_wait(asio::use_awaitable));
      } catch (const asio::multiple_exceptions& e) {
        std::rethrow_exception(e.first_exception());
      }
    }
  }

  /// Frame-free waits, for loops that pass a message per turn. Every
  /// co_await of async_send() or async_receive() creates a coroutine frame
  /// for the operation, even when it need not wait: on one thread a
  /// ping-pong hop takes about 870 instructions and 75-118 ns with these
  /// waits against 1,340 and 121-139 ns with those (BENCHMARKS.md,
  /// "Frame-free waits"). wait_for_item(w) parks the
  /// calling coroutine itself until an item is buffered or the channel is
  /// drained; wait_for_room(w) until a slot is free or the channel is
  /// closed. Neither takes nor gives an item, so the caller tries first and
  /// waits only when it must, and tries again after: another coroutine may
  /// have taken the item or the slot meanwhile. co_await each as a statement
  /// of its own, then call w.throw_if_aborted() (a cancelled wait ends with
  /// operation_aborted, as async_receive does):
  ///
  ///     std::optional<T> v;
  ///     while (!(v = ch.try_receive()) && !ch.is_drained()) {
  ///       coral::channel_waiter w;
  ///       co_await ch.wait_for_item(w);
  ///       w.throw_if_aborted();
  ///     }
  ///     // v: an item, or nullopt once the channel is closed and drained
  ///
  ///     bool sent = ch.try_send(std::move(x));
  ///     while (!sent && !ch.is_closed()) {
  ///       coral::channel_waiter w;
  ///       co_await ch.wait_for_room(w);
  ///       w.throw_if_aborted();
  ///       sent = ch.try_send(std::move(x));  // a failed try leaves x as it was
  ///     }
  ///
  /// async_receive and async_send run the same loops in a frame of their own.
  [[nodiscard]] auto wait_for_item(channel_waiter& w) {
    // Ready once a slot is reserved (its item may still be on its way into
    // the queue, or on its way out to another receiver: the caller's next
    // try then fails and it comes back here, a short spin) or the channel is
    // closed (then a receiver never parks: it takes what is left, or sees
    // the channel drained).
    return detail::park(receivers_, w,
                        [](std::uint64_t s) { return (s & count_mask) != 0 || (s & closed_bit) != 0; });
  }
  /// See wait_for_item.
  [[nodiscard]] auto wait_for_room(channel_waiter& w) {
    return detail::park(senders_, w,
                        [this](std::uint64_t s) { return (s & closed_bit) != 0 || (s & count_mask) < capacity_; });
  }

  /// Closes the channel (see the class comment). Idempotent.
  void close() noexcept {
    const auto before = state_.fetch_or(closed_bit, std::memory_order_acq_rel);
    if ((before & receivers_waiting) != 0) receivers_.wake_all();
    if ((before & senders_waiting) != 0) senders_.wake_all();
  }

  /// True once close() was called.
  [[nodiscard]] bool is_closed() const noexcept {
    return (state_.load(std::memory_order_acquire) & closed_bit) != 0;
  }
  /// True once closed and every item sent before the close was received.
  [[nodiscard]] bool is_drained() const noexcept {
    return (state_.load(std::memory_order_acquire) & (closed_bit | count_mask)) == closed_bit;
  }
  /// Items buffered or being sent right now (a snapshot).
  [[nodiscard]] std::size_t size() const noexcept {
    return static_cast<std::size_t>(state_.load(std::memory_order_relaxed) & count_mask);
  }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  /// Coroutines parked in async_receive, async_receive_some or wait_for_item (a snapshot).
  [[nodiscard]] std::size_t waiting_receivers() const noexcept { return receivers_.size(); }
  /// Coroutines parked in async_send or wait_for_room (a snapshot).
  [[nodiscard]] std::size_t waiting_senders() const noexcept { return senders_.size(); }
  /// Pages the queue had to take from the heap since the channel was made:
  /// 0, unless the bound in detail/page_pool.hpp were wrong (tests check it).
  [[nodiscard]] std::size_t pages_from_heap() const noexcept { return pages_.heap_pages(); }

 private:
  /// Parks until an item may be buffered or the channel is drained; takes
  /// nothing. Cancelled, it ends with operation_aborted.
  asio::awaitable<void> item_or_drained() {
    channel_waiter w;
    co_await wait_for_item(w);
    w.throw_if_aborted();
  }

  // state_ = closed flag | receivers-waiting flag | senders-waiting flag |
  // number of reserved slots (pushed or being pushed). One word, so that
  // "reserve unless closed" is a single CAS and no send can slip in after a
  // receiver has seen "closed and drained"; and the read-modify-writes that
  // reserve and release a slot also read whether anyone waits (each
  // waiter_list keeps its flag set while it holds a waiter; see its
  // lost-wake-up argument).
  static constexpr std::uint64_t closed_bit = std::uint64_t{1} << 63;
  static constexpr std::uint64_t receivers_waiting = std::uint64_t{1} << 62;
  static constexpr std::uint64_t senders_waiting = std::uint64_t{1} << 61;
  static constexpr std::uint64_t count_mask = senders_waiting - 1;

 public:
  /// The largest capacity a channel takes (2^61 - 1).
  static constexpr std::size_t max_capacity = count_mask;

 private:
  static std::size_t checked_capacity(std::size_t capacity) {
    if (capacity == 0) throw config_error(std::string(errors::zero_capacity));
    if (capacity > max_capacity) throw config_error(std::string(errors::capacity_too_large));
    return capacity;
  }

  /// The word before the reservation, or nullopt if full or closed.
  std::optional<std::uint64_t> try_reserve() noexcept {
    auto s = state_.load(std::memory_order_relaxed);
    do {
      if ((s & closed_bit) != 0 || (s & count_mask) >= capacity_) return std::nullopt;
    } while (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                           std::memory_order_relaxed));
    return s;
  }

  void release(std::size_t n) noexcept {
    // No receiver waits for the channel to become drained: none parks once
    // it is closed (see wait_for_item), and close() woke those parked before.
    const auto before = state_.fetch_sub(n, std::memory_order_acq_rel);
    if ((before & senders_waiting) != 0) senders_.wake(n);
  }

  /// No slot is reserved, so nothing is buffered: a failed pop from the
  /// oneTBB queue costs about a hundred instructions, one load here. A slot is
  /// reserved before its item is pushed and released after it is popped, so
  /// the count never falls below the items buffered; a stale zero is one that
  /// a concurrent send has not yet made non-zero, which the caller could not
  /// have seen either (a waiter re-checks after parking, see waiter_list).
  bool certainly_empty() const noexcept { return (state_.load(std::memory_order_acquire) & count_mask) == 0; }

  const std::size_t capacity_;
  std::atomic<std::uint64_t> state_{0};
  // Pages come from pages_ and go back to it: a send never allocates, and
  // (unlike tbbmalloc's reuse) every reuse is visible to ThreadSanitizer.
  detail::page_pool pages_;
  tbb::concurrent_queue<T, detail::pooled_allocator<T>> queue_;
  detail::waiter_list receivers_{state_, receivers_waiting};
  detail::waiter_list senders_{state_, senders_waiting};
};

}  // namespace coral
