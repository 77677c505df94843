#include "coral/core/runtime.hpp"

#include <atomic>
#include <csignal>
#include <set>
#include <thread>

#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <catch2/catch.hpp>

#include "../support/watchdog.hpp"
#include "coral/channels/channel.hpp"
#include "coral/core/error.hpp"

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
