#include "coral/envs/faulty.hpp"

#include <cmath>
#include <string>

#include <catch2/catch.hpp>

#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"
#include "harness.hpp"

using namespace coral::envs;
using coral::envs::testing::harness;

namespace {

/// Steps `h` until it throws env_failed; returns its index and what().
std::pair<std::size_t, std::string> step_until_failure(harness& h, int limit = 100) {
  for (int i = 0; i < limit; ++i) {
    h.act(1);
    try {
      h.slice.step_all();
    } catch (const env_failed& e) {
      return {e.index(), e.what()};
    }
  }
  FAIL("no failure within " << limit << " steps");
  return {};
}

}  // namespace

TEST_CASE("without faults, faulty is cartpole step for step", "[envs][faulty]") {
  harness f("faulty", {}, 3);
  harness c("cartpole", {}, 3);
  f.slice.reset_all();
  c.slice.reset_all();
  for (int i = 0; i < 300; ++i) {
    f.act(i % 2);
    c.act(i % 2);
    f.slice.step_all();
    c.slice.step_all();
    REQUIRE(f.obs() == c.obs());
    REQUIRE(f.batch.rewards()[0] == c.batch.rewards()[0]);
    REQUIRE(f.done() == c.done());
  }
}

TEST_CASE("a step that throws is an env_failed naming the env's index in its slice", "[envs][faulty]") {
  harness h("faulty", {{"env", "1"}, {"throw_step", "7"}}, 0, 3);
  h.slice.reset_all();
  const auto [index, what] = step_until_failure(h);
  CHECK(index == 1);
  CHECK(what == "injected fault: step 7");
}

TEST_CASE("a reset that throws, at the start or in an auto-reset, is an env_failed too", "[envs][faulty]") {
  SECTION("the first reset") {
    harness h("faulty", {{"env", "0"}, {"throw_reset", "1"}}, 0, 2);
    try {
      h.slice.reset_all();
      FAIL("reset_all did not throw");
    } catch (const env_failed& e) {
      CHECK(e.index() == 0);
      CHECK(std::string(e.what()) == "reset failed: injected fault: reset 1");
    }
  }
  SECTION("the auto-reset after an episode ends") {
    // Pushing right all the time ends a cartpole episode within a few dozen steps.
    harness h("faulty", {{"env", "0"}, {"throw_reset", "2"}}, 0, 1);
    h.slice.reset_all();
    const auto [index, what] = step_until_failure(h, 500);
    CHECK(index == 0);
    CHECK(what == "reset failed: injected fault: reset 2");
  }
}

TEST_CASE("a non-finite reward or observation is a failure of the env that produced it", "[envs][faulty][finite]") {
  SECTION("NaN reward") {
    harness h("faulty", {{"env", "2"}, {"nan_reward", "4"}}, 0, 3);
    h.slice.reset_all();
    const auto [index, what] = step_until_failure(h);
    CHECK(index == 2);
    CHECK(what == "returned a non-finite reward (nan)");
  }
  SECTION("NaN observation") {
    harness h("faulty", {{"env", "0"}, {"nan_obs", "3"}}, 0, 2);
    h.slice.reset_all();
    const auto [index, what] = step_until_failure(h);
    CHECK(index == 0);
    CHECK(what == "wrote a non-finite observation (element 0 = nan)");
  }
  SECTION("infinite observation") {
    harness h("faulty", {{"env", "1"}, {"inf_obs", "5"}}, 0, 2);
    h.slice.reset_all();
    const auto [index, what] = step_until_failure(h);
    CHECK(index == 1);
    CHECK(what == "wrote a non-finite observation (element 2 = inf)");
  }
  SECTION("checks off: the value is passed on") {
    harness h("faulty", {{"env", "0"}, {"nan_reward", "2"}}, 0, 1);
    h.slice.check_finite(false);
    h.slice.reset_all();
    h.act(0);
    h.slice.step_all();
    h.act(0);
    REQUIRE_NOTHROW(h.slice.step_all());
    CHECK(std::isnan(h.batch.rewards()[0]));
  }
}

TEST_CASE("repeat makes a fault fire every N steps", "[envs][faulty]") {
  harness h("faulty", {{"env", "-1"}, {"throw_step", "3"}, {"repeat", "true"}}, 0, 1);
  h.slice.reset_all();
  int failures = 0;
  for (int i = 0; i < 9; ++i) {
    h.act(0);
    try {
      h.slice.step_all();
    } catch (const env_failed&) {
      ++failures;
      h.slice.reset_one(0);
    }
  }
  CHECK(failures == 3);
}

TEST_CASE("a normal step clears the failed column that a recovery set", "[envs][faulty]") {
  harness h("faulty", {}, 0, 2);
  h.slice.reset_all();
  CHECK(h.batch.failed()[0] == 0);
  h.batch.failed()[1] = 1;  // as an env group marks a recovered env
  h.act(0);
  h.slice.step_all();
  CHECK(h.batch.failed()[1] == 0);
}
