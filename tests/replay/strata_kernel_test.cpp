#include "coral/replay/detail/strata_kernel.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "coral/core/rng.hpp"

namespace k = coral::replay::detail;

TEST_CASE("the draws' bits are SplitMix64's sequence from the seed", "[replay][strata]") {
  // SplitMix64's first outputs seeded with 0 and with 1234567, as widely
  // published for checking an implementation.
  CHECK(k::strata::bits(0, 0) == 0xe220a8397b1dcdafULL);
  CHECK(k::strata::bits(0, 1) == 0x6e789e6aa1b965f4ULL);
  CHECK(k::strata::bits(0, 2) == 0x06c45d188009454fULL);
  CHECK(k::strata::bits(1234567, 0) == 0x599ed017fb08fc85ULL);
  CHECK(k::strata::bits(1234567, 1) == 0x2c73f08458540fa5ULL);
}

TEST_CASE("stratified_masses gives the plain version's bits in every instruction set", "[replay][strata]") {
  coral::rng r(5);
  for (const k::isa isa : k::available_isas()) {
    INFO("isa " << static_cast<int>(isa));
    for (const std::size_t n : {0u, 1u, 7u, 8u, 9u, 15u, 16u, 17u, 255u, 256u, 1000u}) {
      for (const double stratum : {1.0, 0.0, 1e-300, 3.7e-5, 123456.789, 1e300}) {
        const std::uint64_t seed = r();
        std::vector<double> out(n + 1, -1.0);
        k::stratified_masses(isa, seed, stratum, out.data(), n);
        for (std::size_t i = 0; i < n; ++i) {
          REQUIRE(std::bit_cast<std::uint64_t>(out[i]) ==
                  std::bit_cast<std::uint64_t>(k::strata::mass(seed, i, stratum)));
        }
        CHECK(out[n] == -1.0);  // nothing past n
      }
    }
  }
}

TEST_CASE("stratified masses fall one in each stratum, uniformly and independently", "[replay][strata]") {
  const std::size_t n = 256;
  const double stratum = 0.75;
  coral::rng r(17);
  std::vector<double> out(n);
  constexpr int bins = 16;
  std::vector<double> count(bins, 0.0);
  double sum = 0.0, product = 0.0, samples = 0.0;
  for (int round = 0; round < 400; ++round) {
    k::stratified_masses(k::best_isa(), r(), stratum, out.data(), n);
    double before = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      // In its stratum: [i, i + 1) strata widths.
      REQUIRE(out[i] >= static_cast<double>(i) * stratum);
      REQUIRE(out[i] < static_cast<double>(i + 1) * stratum);
      const double u = out[i] / stratum - static_cast<double>(i);
      count[static_cast<std::size_t>(std::min(u * bins, bins - 1.0))] += 1.0;
      sum += u;
      if (i > 0) product += (u - 0.5) * (before - 0.5);
      before = u;
      samples += 1.0;
    }
  }
  // 102,400 positions: the mean within 0.005 of 1/2 (about 5 standard
  // errors), a chi-square over 16 bins below 50 (15 degrees of freedom; p
  // about 1e-5), and neighbours uncorrelated (|r| below 0.02, 6 standard
  // errors).
  CHECK(std::abs(sum / samples - 0.5) < 0.005);
  double chi2 = 0.0;
  for (const double c : count) chi2 += (c - samples / bins) * (c - samples / bins) / (samples / bins);
  CHECK(chi2 < 50.0);
  CHECK(std::abs(product / samples * 12.0) < 0.02);
}

TEST_CASE("different seeds give different masses", "[replay][strata]") {
  std::vector<double> a(64), b(64);
  k::stratified_masses(k::best_isa(), 1, 1.0, a.data(), a.size());
  k::stratified_masses(k::best_isa(), 2, 1.0, b.data(), b.size());
  int same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += a[i] == b[i] ? 1 : 0;
  CHECK(same == 0);
}
