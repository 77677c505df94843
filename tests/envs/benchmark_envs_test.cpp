#include "coral/envs/delay.hpp"

#include <chrono>

#include <catch2/catch.hpp>

#include "coral/envs/noop.hpp"
#include "harness.hpp"

using namespace coral::envs;
using coral::envs::testing::harness;

TEST_CASE("noop is truncated after episode_length steps", "[envs][noop]") {
  harness h("noop", {{"episode_length", "3"}}, 1);
  h.slice.reset_all();
  h.slice.step_all();
  CHECK(h.obs() == std::vector<float>{1, 0, 0, 0});
  h.slice.step_all();
  CHECK(h.batch.truncated()[0] == 0);
  h.slice.step_all();
  CHECK(h.batch.truncated()[0] == 1);
  CHECK(h.batch.terminated()[0] == 0);
  CHECK(h.final_obs() == std::vector<float>{3, 0, 0, 0});
  CHECK(h.obs() == std::vector<float>{0, 0, 0, 0});
}

TEST_CASE("noop's default episode length is 1000", "[envs][noop]") {
  harness h("noop", {}, 1);
  h.slice.reset_all();
  for (int t = 0; t < 999; ++t) h.slice.step_all();
  CHECK(h.batch.truncated()[0] == 0);
  h.slice.step_all();
  CHECK(h.batch.truncated()[0] == 1);
}

TEST_CASE("delay busy-waits at least its drawn duration per step", "[envs][delay]") {
  harness h("delay", {{"mean_us", "200"}, {"std_us", "0"}}, 1);
  h.slice.reset_all();
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < 5; ++t) h.slice.step_all();
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::microseconds(5 * 200));
}

TEST_CASE("delay draws its durations from a normal truncated at 0, repeatably for a seed", "[envs][delay]") {
  auto a = registry::global().make("delay", {{"mean_us", "5"}, {"std_us", "10"}}, 3, 0);
  auto b = registry::global().make("delay", {{"mean_us", "5"}, {"std_us", "10"}}, 3, 0);
  auto& da = dynamic_cast<delay&>(*a);
  auto& db = dynamic_cast<delay&>(*b);
  int zeros = 0;
  double sum = 0;
  for (int i = 0; i < 4000; ++i) {
    const double d = da.draw_delay_us();
    CHECK(d == db.draw_delay_us());
    CHECK(d >= 0.0);
    zeros += d == 0.0 ? 1 : 0;
    sum += d;
  }
  CHECK(zeros > 1000);  // P(5 + 10 z < 0) = P(z < -0.5) ≈ 0.31
  CHECK(sum / 4000 > 5.0);  // truncation at 0 raises the mean
}
