// tanh_in_place against tanh in double: within 2 ulp over the floats (every
// 97th bit pattern up to 10, every one around the switch between its two
// forms and around 10), the special values, and every length of the
// vector loops' tail.

#include "coral/learners/tanh_kernel.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/float_ulps.hpp"

using coral::learners::tanh_in_place;

namespace {

// |got - tanh(x)| in units of the float spacing at the exact value.
double ulps_off(float got, float x) { return coral::test::float_ulps(got, std::tanh(static_cast<double>(x))); }

// The worst error over these floats and their negatives.
double worst_over(const std::vector<float>& xs) {
  std::vector<float> y;
  y.reserve(2 * xs.size());
  for (const float x : xs) {
    y.push_back(x);
    y.push_back(-x);
  }
  tanh_in_place(y.data(), y.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    worst = std::max({worst, ulps_off(y[2 * i], xs[i]), ulps_off(y[2 * i + 1], -xs[i])});
  }
  return worst;
}

std::vector<float> bit_patterns(float from, float to, std::uint32_t stride) {
  std::vector<float> xs;
  for (std::uint32_t b = std::bit_cast<std::uint32_t>(from); b <= std::bit_cast<std::uint32_t>(to); b += stride) {
    xs.push_back(std::bit_cast<float>(b));
  }
  return xs;
}

}  // namespace

TEST_CASE("tanh_in_place is within 2 ulp of tanh over the floats", "[learners][tanh]") {
  const double spread = worst_over(bit_patterns(0.0f, 10.0f, 97));
  const double at_switch = worst_over(bit_patterns(0.6f, 0.65f, 1));
  const double at_ceiling = worst_over(bit_patterns(9.9f, 10.1f, 1));
  INFO("worst: " << spread << " ulp spread, " << at_switch << " near 0.625, " << at_ceiling << " near 10");
  CHECK(spread <= 2.0);
  CHECK(at_switch <= 2.0);
  CHECK(at_ceiling <= 2.0);
  // Far out, exactly +-1.
  std::vector<float> far{10.0f, 88.0f, 1e30f, std::numeric_limits<float>::max(), -10.0f, -1e30f};
  tanh_in_place(far.data(), far.size());
  CHECK(far == std::vector<float>{1.0f, 1.0f, 1.0f, 1.0f, -1.0f, -1.0f});
}

TEST_CASE("tanh_in_place keeps -0, the smallest values and NaN, and takes +-inf to +-1", "[learners][tanh]") {
  const float tiny = std::numeric_limits<float>::denorm_min();
  std::vector<float> y{0.0f, -0.0f, tiny, -tiny, std::numeric_limits<float>::min(), std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  tanh_in_place(y.data(), y.size());
  CHECK(std::bit_cast<std::uint32_t>(y[0]) == 0u);
  CHECK(std::bit_cast<std::uint32_t>(y[1]) == 0x80000000u);
  CHECK(y[2] == tiny);
  CHECK(y[3] == -tiny);
  CHECK(y[4] == std::numeric_limits<float>::min());
  CHECK(y[5] == 1.0f);
  CHECK(y[6] == -1.0f);
  CHECK(std::isnan(y[7]));
}

TEST_CASE("tanh_in_place gives each value the same bits whatever the length and position", "[learners][tanh]") {
  // The vector loop and its scalar tail compute the same operations.
  const std::vector<float> xs{-3.5f, -0.7f, -0.1f, 0.0f, 0.3f, 0.62f, 0.63f, 1.0f, 2.5f, 8.0f, 12.0f};
  std::vector<float> alone(xs);
  for (float& x : alone) tanh_in_place(&x, 1);
  for (std::size_t n = 1; n <= 40; ++n) {
    std::vector<float> y(n);
    for (std::size_t i = 0; i < n; ++i) y[i] = xs[(i * 7 + n) % xs.size()];
    tanh_in_place(y.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      INFO("length " << n << ", position " << i);
      REQUIRE(std::bit_cast<std::uint32_t>(y[i]) == std::bit_cast<std::uint32_t>(alone[(i * 7 + n) % xs.size()]));
    }
  }
}
