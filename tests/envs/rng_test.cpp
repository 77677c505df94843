#include "coral/core/rng.hpp"

#include <catch2/catch.hpp>

using coral::env_seed;
using coral::rng;

TEST_CASE("an rng gives the same stream for the same seed and env index", "[envs][rng]") {
  rng a(env_seed{7, 3});
  rng b(env_seed{7, 3});
  for (int i = 0; i < 100; ++i) CHECK(a() == b());
}

TEST_CASE("a different seed or env index gives a different stream", "[envs][rng]") {
  rng base(env_seed{7, 3});
  rng other_seed(env_seed{8, 3});
  rng other_index(env_seed{7, 4});
  rng swapped(env_seed{3, 7});
  const auto x = base();
  CHECK(x != other_seed());
  CHECK(x != other_index());
  CHECK(x != swapped());
}

TEST_CASE("rng helpers stay within their ranges", "[envs][rng]") {
  rng r(env_seed{1, 0});
  for (int i = 0; i < 10000; ++i) {
    const double u = r.uniform(-0.05, 0.05);
    CHECK(u >= -0.05);
    CHECK(u < 0.05);
    CHECK(r.below(3) < 3);
  }
}

TEST_CASE("rng::below is close to uniform and normal() has mean 0 and variance 1", "[envs][rng]") {
  rng r(env_seed{2, 0});
  int counts[4] = {0, 0, 0, 0};
  double sum = 0, sum_sq = 0;
  constexpr int n = 40000;
  for (int i = 0; i < n; ++i) {
    ++counts[r.below(4)];
    const double z = r.normal();
    sum += z;
    sum_sq += z * z;
  }
  for (int c : counts) CHECK(c == Approx(n / 4).epsilon(0.05));
  CHECK(sum / n == Approx(0.0).margin(0.03));
  CHECK(sum_sq / n == Approx(1.0).epsilon(0.05));
}
