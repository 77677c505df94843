// The sampling loop allocates nothing per step: this test binary replaces
// the C heap's entry points (malloc, calloc, realloc, memalign, aligned_alloc,
// posix_memalign; operator new lands in malloc) and counts every call over a
// steady-state stretch of batches. Libraries that allocate behind
// operator new's back (oneTBB's aligned pages, say) are counted too.

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <new>

#include <catch2/catch.hpp>

#include "../support/watchdog.hpp"
#include "coral/actors/sampler.hpp"

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
}

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};

void count() {
  if (counting.load(std::memory_order_relaxed)) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    if (std::getenv("CORAL_TRAP_ALLOCATION") != nullptr) std::abort();  // for a backtrace under gdb
  }
}
}  // namespace

extern "C" {
void* malloc(std::size_t n) {
  count();
  return __libc_malloc(n);
}
void* calloc(std::size_t n, std::size_t size) {
  count();
  return __libc_calloc(n, size);
}
void* realloc(void* p, std::size_t n) {
  count();
  return __libc_realloc(p, n);
}
void* memalign(std::size_t alignment, std::size_t n) {
  count();
  return __libc_memalign(alignment, n);
}
void* aligned_alloc(std::size_t alignment, std::size_t n) {
  count();
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t n) {
  count();
  void* p = __libc_memalign(alignment, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}

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
