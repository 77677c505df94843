#pragma once
/// \file
/// Machinery of Channel<T>'s slow path: a suspended coroutine parked in an
/// intrusive list until a sender or receiver wakes it. Not public API.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <new>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include <asio/any_io_executor.hpp>
#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/error.hpp>
#include <asio/bind_allocator.hpp>
#include <asio/defer.hpp>
#include <asio/execution/allocator.hpp>
#include <asio/execution/blocking.hpp>
#include <asio/execution/execute.hpp>
#include <asio/execution/relationship.hpp>
#include <asio/prefer.hpp>
#include <asio/require.hpp>
#include <asio/io_context.hpp>
#include <asio/strand.hpp>

#include "coral/core/handler_allocator.hpp"
#include "coral/core/spin_lock.hpp"

namespace coral::detail {

/// One parked operation. It lives in the frame of the coroutine that waits,
/// so parking allocates nothing; the completion handler is stored inline.
struct waiter {
  waiter* prev = nullptr;
  waiter* next = nullptr;
  bool linked = false;
  /// Moves the stored handler out and posts it to its own executor with `ec`.
  void (*complete)(waiter&, asio::error_code) = nullptr;
  alignas(std::max_align_t) std::byte handler[64];
};

/// A FIFO of parked waiters, guarded by its own spin lock. The `count` mirror lets
/// the fast path ask "is anyone waiting?" without taking the lock.
class waiter_list {
 public:
  /// Parks `w` unless `ready()` (checked after `w` is visible to wakers, so
  /// that a wake between the caller's failed attempt and the parking is never
  /// lost) says the wait is already over; then completes `w` at once.
  template <class Ready>
  void park(waiter& w, Ready&& ready) {
    {
      std::unique_lock<coral::spin_lock> lock(mutex_);
      link(w);  // an acq_rel RMW on count_: see any_waiting()
      if (!ready()) return;
      unlink(w);
    }
    w.complete(w, {});
  }

  /// Wakes the oldest waiter, if any. Call after changing the state the
  /// waiters wait for.
  void notify_one() {
    if (any_waiting()) wake_oldest();
  }

  /// Wakes up to `n` of the oldest waiters.
  void notify(std::size_t n) {
    for (; n > 0 && any_waiting() && wake_oldest(); --n) {
    }
  }

  /// Wakes every waiter (used by close()).
  void notify_all() {
    if (!any_waiting()) return;
    while (wake_oldest()) {
    }
  }

  /// Completes `w` with operation_aborted if it is still parked.
  void cancel(waiter& w) {
    {
      std::lock_guard<coral::spin_lock> lock(mutex_);
      if (!w.linked) return;
      unlink(w);
    }
    w.complete(w, asio::error::operation_aborted);
  }

  [[nodiscard]] std::size_t size() const noexcept { return count_.load(std::memory_order_relaxed); }

 private:
  // The lost-wake-up argument. A waiter links itself (an acq_rel RMW on
  // count_), then checks the state it waits for; a waker changes that state,
  // then reads count_ with an acq_rel RMW. RMWs on one atomic are totally
  // ordered and each reads the latest value: if the waker's RMW comes second
  // it sees the waiter; if it comes first, the waiter's RMW synchronizes with
  // it, so the waiter's check sees the waker's state change. (A plain load
  // would need seq_cst fences on both sides, which ThreadSanitizer cannot
  // check.)
  bool any_waiting() noexcept { return count_.fetch_add(0, std::memory_order_acq_rel) != 0; }

  /// Unparks and completes the oldest waiter; false if there was none.
  bool wake_oldest() {
    waiter* w = nullptr;
    {
      std::lock_guard<coral::spin_lock> lock(mutex_);
      w = head_;
      if (w == nullptr) return false;
      unlink(*w);
    }
    w->complete(*w, {});  // outside the lock: it posts to another executor
    return true;
  }

  void link(waiter& w) noexcept {
    w.prev = tail_;
    w.next = nullptr;
    (tail_ ? tail_->next : head_) = &w;
    tail_ = &w;
    w.linked = true;
    count_.fetch_add(1, std::memory_order_acq_rel);
  }
  void unlink(waiter& w) noexcept {
    (w.prev ? w.prev->next : head_) = w.next;
    (w.next ? w.next->prev : tail_) = w.prev;
    w.prev = w.next = nullptr;
    w.linked = false;
    count_.fetch_sub(1, std::memory_order_relaxed);
  }

  coral::spin_lock mutex_;
  waiter* head_ = nullptr;
  waiter* tail_ = nullptr;
  std::atomic<std::size_t> count_{0};
};

/// Queues `f` on `ex` as a continuation that never runs inside this call
/// (blocking.never), with its block from handler_allocator. This is what
/// asio::defer does, minus the work_dispatcher it wraps around any handler
/// with an associated allocator: that wrapper holds a second work-tracked
/// executor and dispatches through it again when run, to no purpose here,
/// since the queued function itself counts as outstanding work.
template <class Executor, class F>
void defer_on(const Executor& ex, F&& f) {
  asio::execution::execute(asio::prefer(asio::require(ex, asio::execution::blocking.never),
                                        asio::execution::relationship.continuation,
                                        asio::execution::allocator(handler_allocator<void>{})),
                           std::forward<F>(f));
}

/// Defers `f` to `ex`. The executor types the runtime gives actors (and the
/// plain io_context and strand ones) are unwrapped first: deferring through
/// the type-erased any_io_executor builds a new one on the heap (a strand
/// does not fit its small buffer), which would allocate on every wake-up.
template <class F>
void defer_to(const asio::any_io_executor& ex, F&& f) {
  using io_executor = asio::io_context::executor_type;
  using strand_executor = asio::strand<io_executor>;
  // Asio 1.22's any_executor::target<T>() casts without checking the type.
  // The type_info objects are compared by address first: that is the common
  // case and spares a string comparison per wake-up; == is the fallback for
  // type_info objects duplicated across shared libraries.
  const auto& type = ex.target_type();
  if (&type == &typeid(actor_strand)) {
    defer_on(*ex.target<actor_strand>(), std::forward<F>(f));
  } else if (&type == &typeid(actor_io_executor)) {
    defer_on(*ex.target<actor_io_executor>(), std::forward<F>(f));
  } else if (type == typeid(actor_strand)) {
    defer_on(*ex.target<actor_strand>(), std::forward<F>(f));
  } else if (type == typeid(actor_io_executor)) {
    defer_on(*ex.target<actor_io_executor>(), std::forward<F>(f));
  } else if (type == typeid(strand_executor)) {
    defer_on(*ex.target<strand_executor>(), std::forward<F>(f));
  } else if (type == typeid(io_executor)) {
    defer_on(*ex.target<io_executor>(), std::forward<F>(f));
  } else {
    asio::defer(ex, asio::bind_allocator(handler_allocator<void>{}, std::forward<F>(f)));
  }
}

/// Initiation of the wait: stores the handler in the waiter, hooks up
/// per-operation cancellation, and parks it.
template <class Ready>
struct park_initiation {
  waiter_list* list;
  waiter* w;
  Ready ready;

  template <class Handler>
  void operator()(Handler&& handler) {
    using handler_type = std::decay_t<Handler>;
    static_assert(sizeof(handler_type) <= sizeof(waiter::handler), "handler too large for inline storage");
    static_assert(alignof(handler_type) <= alignof(std::max_align_t));

    // No outstanding-work tracking while parked: for a strand, preferring a
    // tracked executor builds a new type-erased executor on the heap on every
    // wait. The runtime's executors hold work guards for as long as actors run.
    auto slot = asio::get_associated_cancellation_slot(handler);
    ::new (static_cast<void*>(w->handler)) handler_type(std::forward<Handler>(handler));
    w->complete = [](waiter& self, asio::error_code ec) {
      auto* stored = std::launder(reinterpret_cast<handler_type*>(self.handler));
      handler_type h(std::move(*stored));
      stored->~handler_type();
      auto ex = asio::get_associated_executor(h);
      // Never resume inline: the waker may be another coroutine's thread.
      defer_to(ex, [h = std::move(h), ec]() mutable { std::move(h)(ec); });
    };
    if (slot.is_connected()) {
      slot.template emplace<cancel_handler>(list, w);
    }
    list->park(*w, ready);
  }

  struct cancel_handler {
    // A constructor, not an aggregate: Asio's slot emplaces it with
    // parentheses, which clang 14 does not take for aggregates (P0960).
    cancel_handler(waiter_list* l, waiter* x) noexcept : list(l), w(x) {}
    waiter_list* list;
    waiter* w;
    void operator()(asio::cancellation_type type) {
      if (type != asio::cancellation_type::none) list->cancel(*w);
    }
  };
};

/// Suspends until `list` wakes `w`, or completes at once if `ready()`.
/// Completes with operation_aborted when cancelled through the handler's slot.
template <class CompletionToken, class Ready>
auto async_park(waiter_list& list, waiter& w, Ready ready, CompletionToken&& token) {
  return asio::async_initiate<CompletionToken, void(asio::error_code)>(
      park_initiation<Ready>{&list, &w, std::move(ready)}, token);
}

}  // namespace coral::detail
