// A channel's wake-up on an io_context's executor allocates nothing: the
// parked waiter is itself the operation queued on the scheduler. This binary
// replaces the global operator new to count heap calls, so it is kept apart
// from the other channel tests.

#include "coral/channels/channel.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <optional>

#include <asio/co_spawn.hpp>
#include <asio/execution/allocator.hpp>
#include <asio/io_context.hpp>
#include <asio/require.hpp>
#include <catch2/catch.hpp>

#include "coral/core/handler_allocator.hpp"

namespace {
std::atomic<std::size_t> heap_calls{0};
}  // namespace

// Every form of the global operator new and delete is replaced: a sanitizer
// supplies its own for any form left out, and would see its blocks freed here.
namespace {
void* counted_alloc(std::size_t bytes, std::size_t align) noexcept {
  heap_calls.fetch_add(1, std::memory_order_relaxed);
  if (bytes == 0) bytes = 1;
  if (align <= alignof(std::max_align_t)) return std::malloc(bytes);
  return std::aligned_alloc(align, (bytes + align - 1) / align * align);  // a multiple, as it requires
}
void* counted_alloc_or_throw(std::size_t bytes, std::size_t align) {
  if (void* p = counted_alloc(bytes, align)) return p;
  throw std::bad_alloc();
}
constexpr auto plain = alignof(std::max_align_t);
auto width(std::align_val_t a) { return static_cast<std::size_t>(a); }
}  // namespace

// GCC warns where it inlines a delete of a new'd object into these frees:
// here both come from malloc, so the pair matches.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) { return counted_alloc_or_throw(n, plain); }
void* operator new[](std::size_t n) { return counted_alloc_or_throw(n, plain); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, plain); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, plain); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_alloc_or_throw(n, width(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_alloc_or_throw(n, width(a)); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, width(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, width(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

using coral::channel;
using coral::channel_waiter;

/// Receives from `ch` until it is drained, parking with the frame-free form
/// (as env groups and the batcher do), counting what it received.
asio::awaitable<void> receive_all(channel<int>& ch, std::size_t& received) {
  for (;;) {
    std::optional<int> v;
    while (!(v = ch.try_receive()) && !ch.is_drained()) {
      channel_waiter w;
      co_await ch.wait_for_item(w);
      w.throw_if_aborted();
    }
    if (!v) co_return;
    ++received;
  }
}

/// Parks `parties` receivers on one channel, then wakes them all `rounds`
/// times over (one item each); returns the heap calls made by the rounds
/// after the first. Asio's own executor and the runtime's actor executor
/// (with handler_allocator) are both io_context executors.
template <class Executor>
std::size_t heap_calls_in_wakeups(Executor ex, asio::io_context& ctx, std::size_t parties, int rounds) {
  channel<int> ch(parties);
  std::size_t received = 0;
  for (std::size_t i = 0; i < parties; ++i) {
    asio::co_spawn(ex, receive_all(ch, received), [](std::exception_ptr e) {
      if (e) std::rethrow_exception(e);
    });
  }
  ctx.poll();
  REQUIRE(received == 0);
  std::size_t calls = 0;
  for (int round = 0; round < rounds; ++round) {
    const std::size_t before = heap_calls.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < parties; ++i) REQUIRE(ch.try_send(static_cast<int>(i)));
    ctx.poll();
    if (round > 0) calls += heap_calls.load(std::memory_order_relaxed) - before;
    REQUIRE(received == parties * static_cast<std::size_t>(round + 1));
  }
  ch.close();
  ctx.poll();
  return calls;
}

}  // namespace

TEST_CASE("waking coroutines parked on an io_context's executor takes nothing from the heap", "[channels]") {
  // A thousand at once: more wake-ups in flight than any cache of handler
  // blocks holds (64 a thread, 256 shared), so a wake-up that queued an
  // allocated block would reach the heap here.
  asio::io_context ctx(1);
  SECTION("Asio's executor") { CHECK(heap_calls_in_wakeups(ctx.get_executor(), ctx, 1000, 5) == 0); }
  SECTION("the runtime's actor executor") {
    const coral::actor_io_executor ex =
        asio::require(ctx.get_executor(), asio::execution::allocator(coral::handler_allocator<void>{}));
    CHECK(heap_calls_in_wakeups(ex, ctx, 1000, 5) == 0);
  }
}

TEST_CASE("an io_context destroyed with woken coroutines still queued frees them", "[channels]") {
  // The queued waiter is destroyed with the scheduler's queue; ASan's leak
  // check fails this test if a coroutine frame is left behind.
  std::size_t received = 0;
  channel<int> ch(8);
  {
    asio::io_context ctx(1);
    for (int i = 0; i < 8; ++i) {
      asio::co_spawn(ctx, receive_all(ch, received), [](std::exception_ptr) {});
    }
    ctx.poll();
    for (int i = 0; i < 8; ++i) REQUIRE(ch.try_send(i));
    CHECK(received == 0);
  }
  CHECK(received == 0);
}
