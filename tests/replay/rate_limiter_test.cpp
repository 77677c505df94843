#include "coral/replay/rate_limiter.hpp"

#include <catch2/catch.hpp>

#include "coral/core/error.hpp"
#include "coral/core/rng.hpp"

using coral::replay::rate_limiter;
using coral::replay::rate_limiter_config;

TEST_CASE("a rate limiter allows inserts and no samples before the minimum size", "[replay][rate_limiter]") {
  rate_limiter limiter(rate_limiter_config{4.0, 100, 8.0});
  CHECK_FALSE(limiter.can_sample(1));
  CHECK(limiter.can_insert(100));
  limiter.record_insert(99);
  CHECK_FALSE(limiter.can_sample(1));
  limiter.record_insert(1);
  CHECK(limiter.can_sample(8));
  CHECK_FALSE(limiter.can_sample(9));
  // diff is at its offset 400; one insert adds 4, within the buffer of 8.
  CHECK(limiter.can_insert(2));
  CHECK_FALSE(limiter.can_insert(3));
}

TEST_CASE("a rate limiter holds its samples-per-insert ratio over a long interleaving", "[replay][rate_limiter]") {
  for (const double ratio : {0.25, 1.0, 8.0, 32.0}) {
    const double buffer = ratio + 1.0;
    rate_limiter limiter(rate_limiter_config{ratio, 1000, buffer});
    coral::rng r(static_cast<std::uint64_t>(ratio * 100));
    for (int round = 0; round < 200000; ++round) {
      // Actors and learner race: each turn one side tries, chosen at random,
      // with a batch of 1 to 4 items; the loser of a refusal simply waits.
      const std::uint64_t n = 1 + r.below(4);
      if (r.bernoulli(0.5)) {
        if (limiter.can_insert(n)) limiter.record_insert(n);
      } else if (limiter.can_sample(n)) {
        limiter.record_sample(n);
      }
      if (limiter.inserts() >= 1000) {
        REQUIRE(limiter.diff() >= limiter.min_diff());
        REQUIRE(limiter.diff() <= limiter.max_diff());
      }
      // Neither side is ever locked out for a single item.
      REQUIRE((limiter.can_insert(1) || limiter.can_sample(1)));
    }
    REQUIRE(limiter.inserts() > 2000);
    const double measured = static_cast<double>(limiter.samples()) / static_cast<double>(limiter.inserts() - 1000);
    CHECK(measured == Approx(ratio).epsilon(0.01));
  }
}

TEST_CASE("a rate limiter rejects a bad ratio or a too small error buffer with exact messages",
          "[replay][rate_limiter][errors]") {
  CHECK_THROWS_MATCHES(rate_limiter(rate_limiter_config{0.0, 1, 1.0}), coral::config_error,
                       Catch::Message("rate_limiter: samples_per_insert 0 must be positive"));
  CHECK_THROWS_MATCHES(rate_limiter(rate_limiter_config{4.0, 1, 2.0}), coral::config_error,
                       Catch::Message("rate_limiter: error_buffer 2 must be at least (samples_per_insert + 1) / 2 = 2.5"));
}
