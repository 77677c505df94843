#include "coral/actors/step_budget.hpp"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

using coral::actors::step_budget;

TEST_CASE("a step budget hands out half of what is left over the claimers, at least the minimum, until none is left",
          "[actors][step_budget]") {
  step_budget b(1'000, 2);
  CHECK(b.claim(4) == 250);  // 1000 / (2 × 2)
  CHECK(b.left() == 750);
  CHECK(b.claim(4) == 187);
  CHECK(b.claim(200) == 200);  // the minimum, when it is more
  std::uint64_t total = 250 + 187 + 200;
  for (std::uint64_t c; (c = b.claim(4)) != 0;) {
    CHECK(c >= 1);
    total += c;
  }
  CHECK(total == 1'000);
  CHECK(b.left() == 0);
  CHECK(b.claim(4) == 0);

  step_budget small(3, 4);
  CHECK(small.claim(8) == 3);  // no more than is left
  CHECK(small.claim(8) == 0);
  step_budget none(0, 1);
  CHECK(none.claim(1) == 0);
  step_budget one(5, 1);
  CHECK(one.claim(0) == 2);  // 5 / 2; a minimum of 0 still takes at least 1 at the end
  CHECK(one.claim(0) == 1);
  CHECK(one.claim(0) == 1);
  CHECK(one.claim(0) == 1);
  CHECK(one.claim(0) == 0);
}

TEST_CASE("threads claiming from one step budget at once get exactly its total between them", "[actors][step_budget]") {
  constexpr std::uint64_t total = 1'000'003;
  constexpr std::size_t threads = 4;
  step_budget b(total, threads);
  std::vector<std::uint64_t> got(threads, 0);
  std::vector<std::uint64_t> claims(threads, 0);
  {
    std::vector<std::jthread> pool;
    for (std::size_t t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        for (std::uint64_t c; (c = b.claim(1)) != 0;) {
          got[t] += c;
          ++claims[t];
        }
      });
    }
  }
  std::uint64_t sum = 0;
  std::uint64_t n = 0;
  for (std::size_t t = 0; t < threads; ++t) {
    sum += got[t];
    n += claims[t];
  }
  CHECK(sum == total);
  CHECK(n < 200);  // geometric: about 2 × threads × ln(total) claims, not one per step
}
