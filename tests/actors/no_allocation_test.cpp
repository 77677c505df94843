// The sampling loop allocates nothing per step: the global operator new is
// replaced in this test binary and counted over a steady-state stretch.

#include <atomic>
#include <cstdlib>
#include <new>

#include <catch2/catch.hpp>

#include "../support/watchdog.hpp"
#include "coral/actors/sampler.hpp"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  if (counting.load(std::memory_order_relaxed)) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    if (std::getenv("CORAL_TRAP_ALLOCATION") != nullptr) std::abort();
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

using namespace coral::actors;

TEST_CASE("the sampling loop allocates nothing per step in steady state", "[actors][allocation]") {
  coral::test::watchdog dog("allocation count", std::chrono::seconds(60));
  auto t = GENERATE(topology::sync, topology::double_buffer, topology::pool);
  auto mode = GENERATE(coral::executor_mode::threads, coral::executor_mode::single);
  CAPTURE(to_string(t));
  sampler_options o;
  o.env = "cartpole";
  o.topo = t;
  o.num_envs = 16;
  o.envs_per_group = 2;
  o.threads = 2;
  o.executor = mode;
  sampler s(o);
  auto pol = make_builtin_policy("random", s.action_space(), s.rows(), 1);
  struct window final : step_consumer {
    long counted = -1;
    void consume(const step_batch& b) override {
      if (b.batch_index == 2'000) {
        allocations = 0;
        counting = true;
      } else if (b.batch_index == 12'000) {
        counting = false;
        counted = allocations.load();
      }
    }
  } w;
  coral::runtime rt({.mode = mode});
  s.spawn(rt, *pol, 20'000 * s.wires().batch_size, &w);
  rt.run();
  REQUIRE(w.counted >= 0);
  CHECK(w.counted == 0);
}
