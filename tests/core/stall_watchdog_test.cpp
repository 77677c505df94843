#include "coral/core/stall_watchdog.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <string>

#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/watchdog.hpp"
#include "coral/core/error.hpp"
#include "coral/core/errors.hpp"
#include "coral/core/runtime.hpp"

using namespace std::chrono_literals;
using coral::executor_mode;

TEST_CASE("the stall watchdog stops a run in which nothing moves, with its report", "[core][stall]") {
  coral::test::watchdog dog("stall", 20s);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  coral::runtime rt({.mode = mode});
  std::atomic<std::uint64_t> steps{0};
  coral::stall_watchdog stall(200ms);
  stall.watch("env steps", [&] { return steps.load(); });
  stall.describe([](std::string& out) { out += "  actor 'stuck': waiting on channel 'nothing'\n"; });
  rt.spawn("stuck", rt.pool("sampling"), []() -> asio::awaitable<void> {
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::hours(1));
    co_await t.async_wait(asio::use_awaitable);  // cancelled by the stop
  });
  rt.spawn_daemon("stall-watchdog", rt.pool("watchdog"), stall.run());
  try {
    rt.run();
    FAIL("the run did not stop");
  } catch (const coral::actor_failed& e) {
    const std::string what = e.what();
    CHECK(e.actor() == "stall-watchdog");
    CHECK_THAT(what, Catch::StartsWith("actor 'stall-watchdog' failed: run stalled: nothing moved for 0.2 s "
                                       "(--stall-seconds):\n  env steps: 0 (last moved "));
    CHECK_THAT(what, Catch::EndsWith("\n  actor 'stuck': waiting on channel 'nothing'"));
  }
}

TEST_CASE("the stall watchdog stays quiet while a counter moves, and is dismissed with the run",
          "[core][stall]") {
  coral::test::watchdog dog("no stall", 20s);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  coral::runtime rt({.mode = mode});
  std::atomic<std::uint64_t> steps{0};
  coral::stall_watchdog stall(100ms);
  stall.watch("env steps", [&] { return steps.load(); });
  rt.spawn("worker", rt.pool("sampling"), [&]() -> asio::awaitable<void> {
    // Moves every 20 ms for 0.5 s: five times the limit, never idle for it.
    asio::steady_timer t(co_await asio::this_coro::executor);
    for (int i = 0; i < 25; ++i) {
      t.expires_after(20ms);
      co_await t.async_wait(asio::use_awaitable);
      steps.fetch_add(1);
    }
  });
  rt.spawn_daemon("stall-watchdog", rt.pool("watchdog"), stall.run());
  REQUIRE_NOTHROW(rt.run());  // returns: the daemon was dismissed when the worker ended
  CHECK(steps.load() == 25);
}

TEST_CASE("a stall report names a limit on the address space (ulimit -v), and only then", "[core][stall]") {
  rlimit before{};
  REQUIRE(::getrlimit(RLIMIT_AS, &before) == 0);
  coral::stall_watchdog stall(100ms);
  stall.watch("env steps", [] { return std::uint64_t{0}; });
  const auto line = fmt::format(fmt::runtime(coral::errors::stall_address_space), 1ULL << 42);
  if (before.rlim_cur == RLIM_INFINITY) CHECK_THAT(stall.report(), !Catch::Contains("ulimit -v"));
  // 4 EiB: finite, yet past any address this process can map, so nothing
  // here (a sanitizer's shadow included) can fail under it.
  rlimit limited = before;
  limited.rlim_cur = std::min<rlim_t>(before.rlim_max, rlim_t{1} << 62);
  REQUIRE(::setrlimit(RLIMIT_AS, &limited) == 0);
  const auto report = stall.report();
  REQUIRE(::setrlimit(RLIMIT_AS, &before) == 0);
  if (limited.rlim_cur == rlim_t{1} << 62) {
    CHECK_THAT(report, Catch::EndsWith(line.substr(0, line.size() - 1)));
  } else {
    CHECK_THAT(report, Catch::Contains("(ulimit -v)"));
  }
}
