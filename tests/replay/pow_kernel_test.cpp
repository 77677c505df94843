#include "coral/replay/detail/pow_kernel.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/float_ulps.hpp"
#include "coral/core/rng.hpp"

namespace k = coral::replay::detail;

namespace {

constexpr float flt_min = std::numeric_limits<float>::min();
constexpr float flt_max = std::numeric_limits<float>::max();

// Distance from the exact x^y (in double) in units of the float spacing
// there.
double ulps(float got, float x, float y) {
  return coral::test::float_ulps(got, std::pow(static_cast<double>(x), static_cast<double>(y)));
}

// x spread evenly in log over every normal positive float, and the points
// where the method switches (around sqrt 2, powers of two, the ends).
std::vector<float> normal_inputs(coral::rng& r, std::size_t count) {
  std::vector<float> xs = {1.0f, 2.0f, 0.5f, 1.5f, 1.41421353f, 1.41421354f, 1.41421366f, 0.70710677f,
                           flt_min, flt_max, 3.0f, 1e-6f, 1e6f, std::nextafter(1.0f, 2.0f), std::nextafter(1.0f, 0.0f)};
  const double lo = std::log(static_cast<double>(flt_min)), hi = std::log(static_cast<double>(flt_max));
  while (xs.size() < count) xs.push_back(static_cast<float>(std::exp(r.uniform(lo, hi))));
  for (float& x : xs) x = std::min(std::max(x, flt_min), flt_max);
  return xs;
}

}  // namespace

TEST_CASE("pow_many is within 2 ulp of the exact power for every normal x and y in [-1, 1]", "[replay][pow]") {
  coral::rng r(11);
  const std::vector<float> xs = normal_inputs(r, 200'003);  // not a multiple of 8: the padded tail runs too
  std::vector<float> out(xs.size());
  for (const k::isa isa : k::available_isas()) {
    INFO("isa " << static_cast<int>(isa));
    double worst = 0.0;
    for (const float y : {0.6f, 0.4f, -0.4f, 1.0f, -1.0f, 0.5f, -0.5f, 0.999f, 1e-3f, -0.123456f, 0.0f, 0.7f, -0.9f}) {
      INFO("y = " << y);
      k::pow_many(isa, xs.data(), y, out.data(), xs.size());
      for (std::size_t i = 0; i < xs.size(); ++i) {
        const double u = ulps(out[i], xs[i], y);
        worst = std::max(worst, u);
        if (!(u <= 2.0)) FAIL("x = " << xs[i] << ": " << out[i] << " is " << u << " ulp from the exact power");
      }
      CHECK(out[0] == 1.0f);  // 1^y
    }
    // Exact where the exact power is a float: y = 0, and 4^(1/2).
    float x4 = 4.0f, root = 0.0f;
    k::pow_many(isa, &x4, 0.5f, &root, 1);
    CHECK(root == 2.0f);
    k::pow_many(isa, xs.data(), 0.0f, out.data(), xs.size());
    for (const float v : out) REQUIRE(v == 1.0f);
    INFO("worst " << worst << " ulp");
    CHECK(worst > 0.0);  // the measurement measured something
  }
}

TEST_CASE("pow_many's SSE2, AVX2 and AVX-512 lanes give the bits of its plain C++ twin", "[replay][pow]") {
#if defined(__FP_FAST_FMAF)
  WARN("this build may fuse a product and a sum in the plain version: bits are not compared");
#else
  coral::rng r(12);
  const std::vector<float> xs = normal_inputs(r, 100'005);
  std::vector<float> out(xs.size());
  for (const k::isa isa : k::available_isas()) {
    INFO("isa " << static_cast<int>(isa));
    for (const float y : {0.6f, -0.4f, 1.0f, -1.0f, 0.3f}) {
      k::pow_many(isa, xs.data(), y, out.data(), xs.size());
      for (std::size_t i = 0; i < xs.size(); ++i) {
        REQUIRE(std::bit_cast<std::uint32_t>(out[i]) == std::bit_cast<std::uint32_t>(k::scalar::pow_one(xs[i], y)));
      }
    }
  }
#endif
}

TEST_CASE("pow_many leaves zero, subnormal, infinite and NaN x to std::pow, lane by lane, in place",
          "[replay][pow]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float subnormal = flt_min / 8.0f;
  // Odd lanes among normal ones in every position of a group of eight (and
  // so of four), then in a padded tail.
  const std::vector<float> in = {0.0f,  2.0f,  subnormal, 3.0f, inf,  5.0f,  nan,       7.0f,
                                 0.25f, -1.0f, 9.0f,      0.0f, 11.0f, inf, 13.0f,     subnormal,
                                 0.0f,  4.0f,  nan};
  for (const k::isa isa : k::available_isas()) {
    for (const float y : {0.6f, -0.4f, 0.0f}) {
      std::vector<float> xs = in;
      k::pow_many(isa, xs.data(), y, xs.data(), xs.size());  // in place
      for (std::size_t i = 0; i < in.size(); ++i) {
        INFO("isa " << static_cast<int>(isa) << ", x = " << in[i] << ", y = " << y);
        const float expected = std::pow(in[i], y);
        if (in[i] >= flt_min && in[i] <= flt_max) {
          CHECK(ulps(xs[i], in[i], y) <= 2.0);
        } else if (std::isnan(expected)) {
          CHECK(std::isnan(xs[i]));
        } else {
          CHECK(xs[i] == expected);
        }
      }
    }
  }
}
