#include "coral/core/interrupts.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <string>

#include <thread>

#include <catch2/catch.hpp>

#include "../support/watchdog.hpp"

using namespace std::chrono_literals;

namespace {

/// Waits (without sleeping on a guess) until `flag` is set by the watcher thread.
void wait_for(const std::atomic<bool>& flag) {
  while (!flag.load()) std::this_thread::yield();
}

}  // namespace

TEST_CASE("the first signal calls every live scope's first callback and sets interrupted()",
          "[core][interrupts][signals]") {
  coral::test::watchdog dog("first signal", 20s);
  std::atomic<bool> a{false};
  std::atomic<bool> b{false};
  {
    coral::interrupt_scope one([&] { a = true; });
    coral::interrupt_scope two([&] { b = true; });
    CHECK_FALSE(coral::interrupted());
    std::raise(SIGTERM);
    wait_for(a);
    wait_for(b);
    CHECK(coral::interrupted());
    CHECK(coral::interrupt_count() == 1);
  }
  // The stop ended with the last scope: code outside any scope, and a new
  // scope, are not interrupted.
  CHECK_FALSE(coral::interrupted());
  coral::interrupt_scope three([] {});
  CHECK_FALSE(coral::interrupted());
}

// The second signal ends the process: tests/apps/signals_test.cpp sends two
// SIGINTs to the real `coral bench` and checks its exit code and output.
