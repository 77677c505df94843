// Replaces the global allocation functions of this test binary to count
// allocations while a flag is set, and checks that stepping allocates nothing.

#include "coral/envs/env.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

#include <catch2/catch.hpp>

#include "harness.hpp"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};

void* allocate(std::size_t n) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

void* allocate_aligned(std::size_t n, std::align_val_t al) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  const auto a = static_cast<std::size_t>(al);
  if (void* p = std::aligned_alloc(a, (n + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void* operator new(std::size_t n, std::align_val_t a) { return allocate_aligned(n, a); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate_aligned(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

TEST_CASE("stepping and resetting every built-in env through a slice allocates nothing", "[envs][slice][alloc]") {
  for (const auto& name : coral::envs::registry::global().names()) {
    INFO(name);
    coral::envs::config_args args;
    if (name == "delay") args = {{"mean_us", "0"}};
    if (name == "noop") args = {{"episode_length", "7"}};
    coral::envs::testing::harness h(name, args, 5, 4);
    coral::rng actions(coral::env_seed{5, 77});
    const auto& act_space = h.slice.at(0).action_space();
    // Draw the actions up front (whole batches, discrete and continuous
    // parts): only the slice's work is measured.
    const std::size_t rows = h.batch.rows();
    const std::size_t nd = act_space.discrete_size();
    const std::size_t nc = act_space.continuous_size();
    std::vector<std::vector<std::int32_t>> discrete(500, std::vector<std::int32_t>(rows * nd));
    std::vector<std::vector<float>> continuous(500, std::vector<float>(rows * nc));
    for (std::size_t t = 0; t < discrete.size(); ++t) {
      for (std::size_t r = 0; r < rows; ++r) {
        coral::envs::sample_action(act_space, actions, std::span(discrete[t]).subspan(r * nd, nd),
                                   std::span(continuous[t]).subspan(r * nc, nc));
      }
    }
    allocations = 0;
    counting = true;
    h.slice.reset_all();
    for (std::size_t t = 0; t < discrete.size(); ++t) {
      std::copy(discrete[t].begin(), discrete[t].end(), h.batch.discrete_actions().data());
      std::copy(continuous[t].begin(), continuous[t].end(), h.batch.continuous_actions().data());
      h.slice.step_all();  // includes auto-resets: episodes end often in 500 random steps
    }
    counting = false;
    CHECK(allocations == 0);
  }
}

TEST_CASE("rendering a built-in env again into the same frame allocates nothing", "[envs][render][alloc]") {
  for (const auto& name : coral::envs::registry::global().names()) {
    INFO(name);
    coral::envs::config_args args;
    if (name == "delay") args = {{"mean_us", "0"}};
    coral::envs::testing::harness h(name, args, 5, 1);
    h.slice.reset_all();
    coral::envs::rgb_frame frame;
    if (!h.slice.at(0).render(frame)) continue;  // the first frame may allocate (the buffer, a renderer)
    allocations = 0;
    counting = true;
    for (int t = 0; t < 20; ++t) {
      h.slice.step_all();
      (void)h.slice.at(0).render(frame);
    }
    counting = false;
    CHECK(allocations == 0);
  }
}
