#include "coral/core/runtime.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <csignal>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <catch2/catch.hpp>

#include "../support/watchdog.hpp"
#include "coral/channels/channel.hpp"
#include "coral/core/error.hpp"
#include "coral/core/handler_allocator.hpp"

using namespace std::chrono_literals;
using coral::executor_mode;

namespace {

/// An actor that waits on a timer far in the future: it ends only if cancelled.
asio::awaitable<void> wait_forever() {
  asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::hours(1));
  co_await t.async_wait(asio::use_awaitable);
}

/// An actor that shields itself from cancellation, then waits far longer than any deadline.
asio::awaitable<void> ignore_stops() {
  co_await asio::this_coro::reset_cancellation_state(asio::disable_cancellation());
  asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::hours(1));
  co_await t.async_wait(asio::use_awaitable);
}

/// An actor on pool "learner" that asks for a stop and ends.
void spawn_stopper(coral::runtime& rt) {
  rt.spawn("stopper", rt.pool("learner"), [&rt]() -> asio::awaitable<void> {
    rt.request_stop();
    co_return;
  });
}

}  // namespace

TEST_CASE("run returns once every actor has finished", "[core][runtime]") {
  coral::test::watchdog dog("runtime run", 20s);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  coral::runtime rt({.mode = mode});
  auto ex = rt.pool("sampling", 2);
  std::atomic<int> ran{0};
  for (int i = 0; i < 4; ++i) {
    rt.spawn("worker-" + std::to_string(i), ex, [&]() -> asio::awaitable<void> {
      ++ran;
      co_return;
    });
  }
  rt.run();
  CHECK(ran == 4);
}

TEST_CASE("a runtime with no actors returns at once", "[core][runtime]") {
  coral::test::watchdog dog("empty runtime", 20s);
  coral::runtime rt;
  rt.run();
  CHECK_FALSE(rt.stop_requested());
}

TEST_CASE("single mode runs every actor on the calling thread", "[core][runtime]") {
  coral::test::watchdog dog("single mode", 20s);
  coral::runtime rt({.mode = executor_mode::single});
  std::set<std::thread::id> ids;
  for (const char* pool : {"sampling", "learner", "replay"}) {
    rt.spawn(std::string("actor-") + pool, rt.pool(pool, 4), [&]() -> asio::awaitable<void> {
      ids.insert(std::this_thread::get_id());
      co_return;
    });
  }
  rt.run();
  CHECK(ids == std::set{std::this_thread::get_id()});
}

TEST_CASE("actors on different pools talk through a channel", "[core][runtime][channels]") {
  coral::test::watchdog dog("cross-pool pipeline", 20s);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  coral::runtime rt({.mode = mode});
  coral::channel<int> ch(4);
  long sum = 0;
  rt.spawn("producer", rt.pool("sampling", 2), [&]() -> asio::awaitable<void> {
    for (int i = 1; i <= 1000; ++i) {
      if (!co_await ch.async_send(i)) throw std::runtime_error("send failed");
    }
    ch.close();
  });
  rt.spawn("consumer", rt.pool("learner", 1), [&]() -> asio::awaitable<void> {
    while (auto v = co_await ch.async_receive()) sum += *v;
  });
  rt.run();
  CHECK(sum == 1000 * 1001 / 2);
}

TEST_CASE("an actor that throws stops every other actor and is named in the error",
          "[core][runtime][errors]") {
  coral::test::watchdog dog("failing actor", 20s);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  coral::runtime rt({.mode = mode});
  coral::channel<int> ch(4);
  rt.close_on_stop(ch);
  auto ex = rt.pool("sampling", 2);
  bool receiver_saw_close = false;
  rt.spawn("receiver", ex, [&]() -> asio::awaitable<void> {
    while (co_await ch.async_receive()) {
    }
    receiver_saw_close = true;
  });
  rt.spawn("sleeper", rt.pool("learner", 1), wait_forever());
  rt.spawn("env-group-3", ex, []() -> asio::awaitable<void> {
    co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
    throw std::runtime_error("boom");
  });
  CHECK_THROWS_MATCHES(rt.run(), coral::actor_failed,
                       Catch::Message("actor 'env-group-3' failed: boom"));
  CHECK(receiver_saw_close);
  CHECK(rt.stop_requested());
}

TEST_CASE("only the first failure is reported", "[core][runtime][errors]") {
  coral::test::watchdog dog("two failures", 20s);
  coral::runtime rt({.mode = executor_mode::single});
  auto ex = rt.pool("sampling");
  rt.spawn("first", ex, []() -> asio::awaitable<void> {
    throw std::runtime_error("one");
    co_return;
  });
  rt.spawn("second", ex, []() -> asio::awaitable<void> {
    co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
    throw std::runtime_error("two");
  });
  try {
    rt.run();
    FAIL("run() did not throw");
  } catch (const coral::actor_failed& e) {
    CHECK(e.actor() == "first");
    CHECK(std::string(e.what()) == "actor 'first' failed: one");
  }
}

TEST_CASE("request_stop ends waiting actors and run returns normally", "[core][runtime][stop]") {
  coral::test::watchdog dog("request_stop", 20s);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  coral::runtime rt({.mode = mode});
  coral::channel<int> ch(4);
  rt.close_on_stop(ch);
  int handled = 0;
  rt.spawn("consumer", rt.pool("sampling", 2), [&]() -> asio::awaitable<void> {
    while (auto v = co_await ch.async_receive()) {
      if (++handled == 3) rt.request_stop();
    }
  });
  rt.spawn("sleeper", rt.pool("learner"), wait_forever());
  for (int i = 0; i < 3; ++i) REQUIRE(ch.try_send(i));
  rt.run();
  CHECK(handled == 3);
  CHECK(rt.stop_requested());
}

TEST_CASE("SIGINT stops the runtime gracefully", "[core][runtime][stop][signals]") {
  coral::test::watchdog dog("SIGINT", 20s);
  coral::runtime rt({.mode = executor_mode::threads, .handle_signals = true});
  coral::channel<int> ch(4);
  rt.close_on_stop(ch);
  bool finished_cleanly = false;
  rt.spawn("consumer", rt.pool("sampling"), [&]() -> asio::awaitable<void> {
    while (co_await ch.async_receive()) {
    }
    finished_cleanly = true;
  });
  rt.spawn("signaller", rt.pool("learner"), []() -> asio::awaitable<void> {
    std::raise(SIGINT);
    co_return;
  });
  rt.run();
  CHECK(finished_cleanly);
  CHECK(rt.stop_requested());
}

TEST_CASE("an actor that ignores a stop is abandoned at the deadline and named",
          "[core][runtime][stop]") {
  coral::test::watchdog dog("stop deadline", 20s);
  coral::runtime rt({.mode = executor_mode::threads, .stop_deadline = 100ms});
  rt.spawn("stubborn", rt.pool("sampling"), ignore_stops());
  rt.spawn("stopper", rt.pool("learner"), [&]() -> asio::awaitable<void> {
    rt.request_stop();
    co_return;
  });
  CHECK_THROWS_MATCHES(rt.run(), coral::stop_timeout,
                       Catch::Message("actors did not stop within 100 ms: stubborn"));
}

TEST_CASE("actor names must be unique", "[core][runtime][errors]") {
  coral::runtime rt({.mode = executor_mode::single});
  auto ex = rt.pool("sampling");
  rt.spawn("a", ex, []() -> asio::awaitable<void> { co_return; });
  CHECK_THROWS_MATCHES(rt.spawn("a", ex, []() -> asio::awaitable<void> { co_return; }),
                       coral::usage_error, Catch::Message("runtime: an actor named 'a' already exists"));
  rt.run();
}

TEST_CASE("a runtime runs only once", "[core][runtime][errors]") {
  coral::runtime rt({.mode = executor_mode::single});
  rt.run();
  CHECK_THROWS_MATCHES(rt.run(), coral::usage_error,
                       Catch::Message(std::string(coral::errors::runtime_already_ran)));
}

TEST_CASE("an actor may spawn another while the runtime runs", "[core][runtime]") {
  coral::test::watchdog dog("spawn from actor", 20s);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  coral::runtime rt({.mode = mode});
  auto ex = rt.pool("sampling", 2);
  std::atomic<bool> child_ran{false};
  rt.spawn("parent", ex, [&]() -> asio::awaitable<void> {
    rt.spawn("child", ex, [&]() -> asio::awaitable<void> {
      child_ran = true;
      co_return;
    });
    co_return;
  });
  rt.run();
  CHECK(child_ran);
}

TEST_CASE("daemons are dismissed once every other actor has finished", "[core][runtime][daemon]") {
  coral::test::watchdog dog("daemons", 20s);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  coral::runtime rt({.mode = mode});
  std::atomic<bool> worker_done{false};
  rt.spawn_daemon("daemon", rt.pool("aux"), wait_forever());
  rt.spawn("worker", rt.pool("sampling"), [&]() -> asio::awaitable<void> {
    worker_done = true;
    co_return;
  });
  REQUIRE_NOTHROW(rt.run());  // the daemon's operation_aborted is a clean end
  CHECK(worker_done);
  CHECK_FALSE(rt.stop_requested());
}

TEST_CASE("a failing daemon stops the run like any actor", "[core][runtime][daemon]") {
  coral::test::watchdog dog("failing daemon", 20s);
  coral::runtime rt({.mode = executor_mode::threads});
  rt.spawn_daemon("daemon", rt.pool("aux"), []() -> asio::awaitable<void> {
    throw std::runtime_error("daemon broke");
    co_return;
  }());
  rt.spawn("worker", rt.pool("sampling"), wait_forever());
  CHECK_THROWS_MATCHES(rt.run(), coral::actor_failed, Catch::Message("actor 'daemon' failed: daemon broke"));
}

TEST_CASE("on_stop_timeout is called with the message the moment the deadline passes", "[core][runtime][stop]") {
  coral::test::watchdog dog("on_stop_timeout", 20s);
  std::string said;
  coral::runtime rt({.mode = executor_mode::threads,
                     .stop_deadline = 100ms,
                     .on_stop_timeout = [&](const std::string& what) { said = what; }});
  rt.spawn("stubborn", rt.pool("sampling"), ignore_stops());
  rt.spawn("stopper", rt.pool("learner"), [&]() -> asio::awaitable<void> {
    rt.request_stop();
    co_return;
  });
  CHECK_THROWS_AS(rt.run(), coral::stop_timeout);
  CHECK(said == "actors did not stop within 100 ms: stubborn");
}

TEST_CASE("an actor that waits on channels only runs without a strand on a pool of several threads",
          "[core][runtime][waits]") {
  coral::test::watchdog dog("channels_only executor", 20s);
  coral::runtime rt({.mode = executor_mode::threads});
  auto pool = rt.pool("sampling", 2);
  std::atomic<bool> plain{false}, stranded{false};
  rt.spawn(
      "lean", pool,
      [&]() -> asio::awaitable<void> {
        const auto ex = co_await asio::this_coro::executor;
        plain = ex.target_type() == typeid(coral::actor_io_executor);
      },
      coral::actor_waits::channels_only);
  rt.spawn("general", pool, [&]() -> asio::awaitable<void> {
    const auto ex = co_await asio::this_coro::executor;
    stranded = ex.target_type() == typeid(coral::actor_strand);
  });
  rt.run();
  CHECK(plain);
  CHECK(stranded);
}

TEST_CASE("a stop ends a channels-only actor only by closing its channels", "[core][runtime][waits][stop]") {
  coral::test::watchdog dog("channels_only stop", 20s);
  const bool closed_at_stop = GENERATE(true, false);
  CAPTURE(closed_at_stop);
  coral::runtime rt({.mode = executor_mode::threads, .stop_deadline = 200ms});
  coral::channel<int> ch(1);
  if (closed_at_stop) rt.close_on_stop(ch);
  std::atomic<bool> saw_close{false};
  rt.spawn(
      "lean", rt.pool("sampling", 2),
      [&]() -> asio::awaitable<void> {
        // No emit reaches it: the receive ends with "closed", not operation_aborted.
        const auto v = co_await ch.async_receive();
        saw_close = !v.has_value();
      },
      coral::actor_waits::channels_only);
  spawn_stopper(rt);
  if (closed_at_stop) {
    REQUIRE_NOTHROW(rt.run());
    CHECK(saw_close);
  } else {
    // Left open, the channel keeps it parked: abandoned at the deadline, named.
    CHECK_THROWS_MATCHES(rt.run(), coral::stop_timeout, Catch::Message("actors did not stop within 200 ms: lean"));
    CHECK_FALSE(saw_close);
    // Closing it now queues the abandoned coroutine on its stopped
    // io_context, which destroys it with the runtime; left parked, its frame
    // would leak.
    ch.close();
  }
}

TEST_CASE("channels-only actors on a pool of several threads hand off without losing or racing",
          "[core][runtime][waits][stress]") {
  // Under ThreadSanitizer this is the check that consecutive resumptions of
  // a strand-less actor on different threads are ordered: every counter is
  // a plain int, touched only by its own actor.
  coral::test::watchdog dog("channels_only ping-pong", 120s);
  constexpr int rounds = 20000;
  constexpr int pairs = 3;
  coral::runtime rt({.mode = executor_mode::threads});
  auto pool = rt.pool("sampling", 2);
  std::vector<std::unique_ptr<coral::channel<int>>> pings, pongs;
  std::vector<long> sums(pairs, 0);
  std::vector<int> returned(pairs, 0);
  for (int p = 0; p < pairs; ++p) {
    pings.push_back(std::make_unique<coral::channel<int>>(1));
    pongs.push_back(std::make_unique<coral::channel<int>>(1));
  }
  for (int p = 0; p < pairs; ++p) {
    auto& ping = *pings[p];
    auto& pong = *pongs[p];
    rt.spawn(
        "server-" + std::to_string(p), pool,
        [&ping, &pong, &sum = sums[p]]() -> asio::awaitable<void> {
          while (auto v = co_await ping.async_receive()) {
            sum += *v;
            const bool sent = co_await pong.async_send(*v + 1);
            if (!sent) co_return;
          }
          pong.close();
        },
        coral::actor_waits::channels_only);
    rt.spawn(
        "client-" + std::to_string(p), pool,
        [&ping, &pong, &got = returned[p]]() -> asio::awaitable<void> {
          for (int i = 0; i < rounds; ++i) {
            const bool sent = co_await ping.async_send(i);
            if (!sent) break;
            const auto back = co_await pong.async_receive();
            if (!back || *back != i + 1) break;
            ++got;
          }
          ping.close();  // also after a wrong answer: the server ends, the counts tell
        },
        coral::actor_waits::channels_only);
  }
  rt.run();
  for (int p = 0; p < pairs; ++p) {
    CHECK(returned[p] == rounds);
    CHECK(sums[p] == static_cast<long>(rounds) * (rounds - 1) / 2);
  }
}

TEST_CASE("handler blocks: a thread reuses what it freed, blocks freed on one thread serve another, and a thread's "
          "cache is emptied when it exits",
          "[core][runtime][handler_pool]") {
  auto& pool = coral::handler_block_pool::instance();
  constexpr std::size_t bytes = 72;  // a size of its own in this test binary
  constexpr std::size_t align = alignof(std::max_align_t);
  // The same thread (a new one: its cache has every size class free): the
  // block it freed last comes back.
  bool reused = false;
  std::thread owner([&] {
    void* a = pool.allocate(bytes, align);
    pool.deallocate(a, bytes, align);
    void* b = pool.allocate(bytes, align);
    reused = a == b;
    pool.deallocate(b, bytes, align);
  });
  owner.join();
  CHECK(reused);
  // One thread allocates, another frees, many times over: the freeing
  // thread's cache fills and passes the rest to the shared cache, which the
  // allocating thread draws on. Under ASan a block lost or freed twice fails.
  std::vector<void*> blocks;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 100; ++i) blocks.push_back(pool.allocate(bytes, align));
    std::thread freer([&] {
      for (void* p : blocks) pool.deallocate(p, bytes, align);
    });
    freer.join();  // its cache (64 blocks) is emptied as it exits; LSan would report them otherwise
    blocks.clear();
  }
  // Blocks Asio allocates with a stricter alignment bypass both caches.
  void* wide = pool.allocate(bytes, 64);
  CHECK(reinterpret_cast<std::uintptr_t>(wide) % 64 == 0);
  pool.deallocate(wide, bytes, 64);
}
