#pragma once
/// \file
/// Machinery of Channel<T>'s slow path: a suspended coroutine parked in an
/// intrusive list until a sender or receiver wakes it. Not public API.
///
/// A channel operation is itself an asio::awaitable coroutine; when it must
/// wait, it parks its own coroutine stack (Asio's "awaitable thread") in a
/// waiter instead of starting an asynchronous operation with the
/// use_awaitable token. That token would push a second coroutine frame for
/// the operation, wrap the stack in a completion handler and pop the frame
/// again on completion; parking the stack directly spares all of it. A
/// wake-up queues the waiter itself on its io_context's scheduler (see
/// waiter). This uses Asio's detail interfaces for awaitables
/// (awaitable_frame_base, awaitable_thread) and for the scheduler
/// (scheduler_operation, io_context_impl's post_immediate_completion): the
/// static_assert below names the version it was written against.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/bind_allocator.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/cancellation_state.hpp>
#include <asio/defer.hpp>
#include <asio/error.hpp>
#include <asio/execution/allocator.hpp>
#include <asio/execution/blocking.hpp>
#include <asio/execution/execute.hpp>
#include <asio/execution/relationship.hpp>
#include <asio/detail/scheduler_operation.hpp>
#include <asio/io_context.hpp>
#include <asio/prefer.hpp>
#include <asio/query.hpp>
#include <asio/require.hpp>
#include <asio/strand.hpp>
#include <asio/system_error.hpp>
#include <asio/this_coro.hpp>
#include <asio/version.hpp>

#include "coral/core/handler_allocator.hpp"
#include "coral/core/spin_lock.hpp"

// park_awaiter relies on how Asio 1.22 runs awaitables: co_await of a function
// object taking the awaitable_frame_base calls it once the coroutine is
// suspended, and resumes the coroutine at once unless the function detached
// the awaitable thread. resume() relies on its scheduler: an operation is
// completed with a non-null owner, or destroyed with a null one, and never
// touched after either. Check all three before moving to another Asio.
static_assert(ASIO_VERSION / 100 == 1022, "coral's channel waiter is written against Asio 1.22's awaitable internals");

namespace coral::detail {

/// The coroutine stack of an asio::awaitable, as Asio runs it.
using awaitable_stack = asio::detail::awaitable_thread<asio::any_io_executor>;

struct cancel_handler;

/// One parked coroutine. It lives in the frame of the channel operation that
/// waits, so parking allocates nothing; the stack it holds is one pointer.
///
/// A waiter is also the scheduler operation that resumes it: on an
/// io_context's executor (what actors waiting on channels only run on), a
/// wake-up queues the waiter itself on the io_context's scheduler, as
/// executing a function there would queue a block allocated to hold it.
/// So a wake-up allocates nothing and cannot fail for want of memory; on
/// other executors (strands) it still queues a function (see resume()).
struct waiter : private asio::detail::scheduler_operation {
  waiter() noexcept : asio::detail::scheduler_operation(&waiter::complete) {}
  waiter(const waiter&) = delete;
  waiter& operator=(const waiter&) = delete;
  /// Disarms the cancellation handler that points here (see park_awaiter).
  inline ~waiter();

  waiter* prev = nullptr;
  waiter* next = nullptr;
  bool linked = false;
  /// Set before the stack is resumed: the wait ended by cancellation.
  bool aborted = false;
  /// The parked coroutine, from parking until it is resumed.
  std::optional<awaitable_stack> stack;
  /// The handler in the coroutine's cancellation slot that cancels this wait.
  cancel_handler* canceller = nullptr;

  /// Throws asio::system_error(operation_aborted) if the wait was cancelled:
  /// what an operation started with the use_awaitable token would throw.
  void throw_if_aborted() const {
    if (aborted) throw asio::system_error(asio::error::operation_aborted);
  }

 private:
  friend void resume(waiter& w, bool aborted);

  /// Run by the scheduler: pumps the parked stack, on the scheduler's
  /// thread; or, with no owner (the io_context is being destroyed with the
  /// waiter queued), lets the stack go. The stack is moved out first: the
  /// waiter lives in a frame of that stack and may end with it.
  static void complete(void* owner, asio::detail::scheduler_operation* base, const asio::error_code&, std::size_t) {
    auto& w = *static_cast<waiter*>(base);
    awaitable_stack stack(std::move(*w.stack));
    w.stack.reset();
    if (owner != nullptr) stack.launch();
  }
};

/// Resumes `w`'s parked coroutine on its own executor; `aborted` tells it why.
inline void resume(waiter& w, bool aborted);

/// A FIFO of parked waiters, guarded by its own spin lock. While any waiter
/// is linked, the list keeps a flag set in its owner's state word, so that
/// the owner's own read-modify-writes of that word (a channel's slot
/// reservation and release) also tell it whether anyone waits: no separate
/// locked instruction on the fast path.
class waiter_list {
 public:
  /// A list whose flag is `flag` (one bit) in `word`.
  waiter_list(std::atomic<std::uint64_t>& word, std::uint64_t flag) noexcept : word_(&word), flag_(flag) {}

  /// Parks `w` unless `ready(s)` says the wait is already over, where `s`
  /// is the owner's word as read by the read-modify-write that sets the
  /// list's flag, after `w` is linked (see the lost-wake-up argument below).
  /// `suspend()` stores the coroutine in `w`, under the lock, so that no
  /// waker sees `w` without it. Returns whether `w` was parked.
  template <class Ready, class Suspend>
  bool park(waiter& w, Ready&& ready, Suspend&& suspend) {
    std::lock_guard<coral::spin_lock> lock(mutex_);
    link(w);
    if (ready(word_->fetch_or(flag_, std::memory_order_acq_rel))) {
      unlink(w);
      return false;
    }
    suspend();
    return true;
  }

  /// Wakes the oldest waiter, if any. The owner calls it after a change of
  /// its word whose read-modify-write found the list's flag set.
  void wake_one() { (void)wake_oldest(); }

  /// Wakes up to `n` of the oldest waiters.
  void wake(std::size_t n) {
    for (; n > 0 && wake_oldest(); --n) {
    }
  }

  /// Wakes every waiter.
  void wake_all() {
    while (wake_oldest()) {
    }
  }

  /// Resumes `w` with operation_aborted if it is still parked.
  void cancel(waiter& w) {
    {
      std::lock_guard<coral::spin_lock> lock(mutex_);
      if (!w.linked) return;
      unlink(w);
    }
    resume(w, true);
  }

  [[nodiscard]] std::size_t size() const noexcept { return count_.load(std::memory_order_relaxed); }

 private:
  // The lost-wake-up argument. A waiter links itself, then sets the flag
  // with a read-modify-write (RMW) of the owner's word and checks the value
  // it read; a waker changes the word with an RMW and wakes if the value it
  // read has the flag. RMWs of one atomic are totally ordered and each reads
  // the value just before it: if the waker's RMW comes second, it reads the
  // flag and wakes the waiter (linked before the flag was set, and found
  // under the lock); if it comes first, the waiter's RMW reads the change
  // and does not park. The flag is cleared, under the lock, only when the
  // list becomes empty, so a waker that reads it finds every waiter linked
  // at that moment (a waiter woken meanwhile by someone else is gone, which
  // is harmless). No fences, so ThreadSanitizer checks all of it.

  /// Unparks and resumes the oldest waiter; false if there was none.
  bool wake_oldest() {
    waiter* w = nullptr;
    {
      std::lock_guard<coral::spin_lock> lock(mutex_);
      w = head_;
      if (w == nullptr) return false;
      unlink(*w);
    }
    resume(*w, false);  // outside the lock: it posts to another executor
    return true;
  }

  void link(waiter& w) noexcept {
    w.prev = tail_;
    w.next = nullptr;
    (tail_ ? tail_->next : head_) = &w;
    tail_ = &w;
    w.linked = true;
    count_.store(count_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void unlink(waiter& w) noexcept {
    (w.prev ? w.prev->next : head_) = w.next;
    (w.next ? w.next->prev : tail_) = w.prev;
    w.prev = w.next = nullptr;
    w.linked = false;
    count_.store(count_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    if (head_ == nullptr) word_->fetch_and(~flag_, std::memory_order_relaxed);
  }

  coral::spin_lock mutex_;
  waiter* head_ = nullptr;
  waiter* tail_ = nullptr;
  std::atomic<std::size_t> count_{0};  // a mirror for size(), written under the lock
  std::atomic<std::uint64_t>* word_;
  std::uint64_t flag_;
};

/// Queues `f` on `ex` as a continuation that never runs inside this call
/// (blocking.never), with its block from handler_allocator. This is what
/// asio::defer does, minus the work_dispatcher it wraps around any handler
/// with an associated allocator: that wrapper holds a second work-tracked
/// executor and dispatches through it again when run, to no purpose here,
/// since the queued function itself counts as outstanding work.
///
/// Each property applied copies the executor (for a strand, a reference count
/// taken and dropped), so the allocator is preferred only where it differs.
template <class Executor, class F>
void defer_on(const Executor& ex, F&& f) {
  const auto continuation =
      asio::prefer(asio::require(ex, asio::execution::blocking.never), asio::execution::relationship.continuation);
  if constexpr (std::is_same_v<decltype(asio::query(ex, asio::execution::allocator)), handler_allocator<void>>) {
    asio::execution::execute(continuation, std::forward<F>(f));
  } else {
    asio::execution::execute(asio::prefer(continuation, asio::execution::allocator(handler_allocator<void>{})),
                             std::forward<F>(f));
  }
}

/// Defers `f` to `ex`, for executors other than an io_context's (resume()
/// queues the waiter itself there). The strand types the runtime gives
/// actors are unwrapped first: deferring through the type-erased
/// any_io_executor builds a new one on the heap (a strand does not fit its
/// small buffer), which would allocate on every wake-up.
template <class F>
void defer_to(const asio::any_io_executor& ex, F&& f) {
  using strand_executor = asio::strand<asio::io_context::executor_type>;
  // Asio 1.22's any_executor::target<T>() casts without checking the type.
  // The type_info objects are compared by address first (the common case,
  // sparing string comparisons per wake-up); == is the fallback for
  // type_info objects duplicated across shared libraries.
  const auto& type = ex.target_type();
  if (&type == &typeid(actor_strand)) {
    defer_on(*ex.target<actor_strand>(), std::forward<F>(f));
  } else if (&type == &typeid(strand_executor)) {
    defer_on(*ex.target<strand_executor>(), std::forward<F>(f));
  } else if (type == typeid(actor_strand)) {
    defer_on(*ex.target<actor_strand>(), std::forward<F>(f));
  } else if (type == typeid(strand_executor)) {
    defer_on(*ex.target<strand_executor>(), std::forward<F>(f));
  } else {
    asio::defer(ex, asio::bind_allocator(handler_allocator<void>{}, std::forward<F>(f)));
  }
}

/// The function queued to a parked coroutine's executor: it pumps the
/// coroutine stack again, on that executor.
struct stack_resumption {
  awaitable_stack stack;
  void operator()() { stack.launch(); }
};

/// The io_context that `ex` runs its functions on directly, or null when it
/// is some other executor (a strand queues them on its own first).
inline asio::io_context* plain_context(const asio::any_io_executor& ex) noexcept {
  using io_executor = asio::io_context::executor_type;
  const auto& type = ex.target_type();  // by address first, as in defer_to
  if (&type == &typeid(actor_io_executor)) return &ex.target<actor_io_executor>()->context();
  if (&type == &typeid(io_executor)) return &ex.target<io_executor>()->context();
  if (type == typeid(actor_io_executor)) return &ex.target<actor_io_executor>()->context();
  if (type == typeid(io_executor)) return &ex.target<io_executor>()->context();
  return nullptr;
}

inline void resume(waiter& w, bool aborted) {
  w.aborted = aborted;
  if (asio::io_context* ctx = plain_context(w.stack->get_executor())) {
    // What the executor's execute() does with blocking.never and
    // relationship.continuation (queue on the calling thread's private
    // queue when it runs this scheduler, else under the lock, counting the
    // work either way), with the waiter as the queued operation. From here
    // on `w` may be gone.
    asio::detail::scheduler_operation* op = &w;
    asio::use_service<asio::detail::io_context_impl>(*ctx).post_immediate_completion(op, true);
    return;
  }
  stack_resumption r{std::move(*w.stack)};
  w.stack.reset();
  // Never resume inline: the waker may be another coroutine's thread. From
  // here on `w` may be gone: the coroutine that owns it can run.
  const auto ex = r.stack.get_executor();
  defer_to(ex, std::move(r));
}

/// The cancellation handler a parked coroutine installs in its slot. Once
/// its waiter is gone it stays in the slot, disarmed (w is null), until the
/// next operation of that coroutine replaces it: Asio's slot then reuses its
/// memory, where removing it would free the memory and take it back at the
/// next wait. It holds no pointer while disarmed, so it never dangles.
struct cancel_handler {
  // A constructor, not an aggregate: Asio's slot emplaces it with
  // parentheses, which clang 14 does not take for aggregates (P0960).
  cancel_handler(waiter_list* l, waiter* x) noexcept : list(l), w(x) {}
  waiter_list* list;
  waiter* w;
  void operator()(asio::cancellation_type type) {
    if (w != nullptr && type != asio::cancellation_type::none) list->cancel(*w);
  }
};

// The handler never outlives its waiter armed, and the waiter never outlives
// the handler: only this coroutine's own operations replace the handler in
// its slot, and it starts none while the waiter exists; the slot (in the
// coroutine's bottom frame) outlives the channel operation's frame.
waiter::~waiter() {
  if (canceller != nullptr) canceller->w = nullptr;
}

/// What a channel operation co_awaits to park its own coroutine in `list`
/// until woken (see the file comment). The coroutine goes on at once, without
/// parking, when `ready()` holds once `w` is visible to wakers, or when it was
/// already cancelled; afterwards, call w.throw_if_aborted(). A wait cancelled
/// through the coroutine's cancellation slot (any type but none) ends aborted.
template <class Ready>
struct park_awaiter {
  waiter_list* list;
  waiter* w;
  Ready ready;

  // Asio calls this once the coroutine is suspended, and resumes it at once
  // unless the stack was detached from `frame` (then it is parked in `w`).
  awaitable_stack* operator()(asio::detail::awaitable_frame_base<asio::any_io_executor>* frame) {
    // What co_await of an awaitable does before it starts: a coroutine
    // cancelled while it was not parked throws at its next wait.
    const auto state = frame->await_transform(asio::this_coro::cancellation_state).await_resume();
    if (state.cancelled() != asio::cancellation_type::none &&
        frame->await_transform(asio::this_coro::throw_if_cancelled()).await_resume()) {
      w->aborted = true;
      return nullptr;
    }
    // No outstanding-work tracking while parked: the runtime's executors
    // hold work guards for as long as actors run.
    auto slot = state.slot();
    if (slot.is_connected()) w->canceller = &slot.template emplace<cancel_handler>(list, w);
    list->park(*w, ready, [&] { w->stack.emplace(std::move(*frame->detach_thread())); });
    return nullptr;
  }
};

/// Parks the calling coroutine in `list` (see park_awaiter). Use as its own
/// statement: `co_await detail::park(list, w, ready); w.throw_if_aborted();`.
template <class Ready>
park_awaiter<Ready> park(waiter_list& list, waiter& w, Ready ready) {
  return park_awaiter<Ready>{&list, &w, std::move(ready)};
}

}  // namespace coral::detail
