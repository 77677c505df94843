#include "coral/replay/segment_tree.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

#include "coral/envs/rng.hpp"

using coral::envs::rng;
using coral::replay::min_tree;
using coral::replay::sum_tree;

namespace {

// Relative to the sum's magnitude: the tree adds in a different order.
bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

}  // namespace

TEST_CASE("sum and min trees match a brute-force reference after random updates", "[replay][segment_tree]") {
  for (const std::size_t leaves : {1u, 7u, 8u, 9u, 64u, 100u, 1000u}) {
    sum_tree sum(leaves);
    min_tree min(leaves);
    std::vector<double> reference(leaves, 0.0);
    std::vector<double> min_reference(leaves, std::numeric_limits<double>::infinity());
    rng r(leaves);
    for (int step = 0; step < 2000; ++step) {
      if (step % 10 == 9) {  // a contiguous run through set_range
        const std::size_t first = r.below(leaves);
        const std::size_t count = 1 + r.below(leaves - first);
        std::vector<double> values(count);
        for (auto& v : values) v = r.uniform(0.0, 10.0);
        sum.set_range(first, values);
        min.set_range(first, values);
        std::copy(values.begin(), values.end(), reference.begin() + static_cast<std::ptrdiff_t>(first));
        std::copy(values.begin(), values.end(), min_reference.begin() + static_cast<std::ptrdiff_t>(first));
      } else {
        const std::size_t i = r.below(leaves);
        const double v = r.uniform(0.0, 10.0);
        sum.set(i, v);
        min.set(i, v);
        reference[i] = v;
        min_reference[i] = v;
      }
      REQUIRE(close(sum.total(), std::accumulate(reference.begin(), reference.end(), 0.0)));
      REQUIRE(min.total() == *std::min_element(min_reference.begin(), min_reference.end()));
    }
    for (std::size_t i = 0; i < leaves; ++i) CHECK(sum.get(i) == reference[i]);
  }
}

TEST_CASE("find_prefix returns the leaf a linear prefix-sum scan finds", "[replay][segment_tree]") {
  constexpr std::size_t leaves = 777;
  sum_tree sum(leaves);
  std::vector<double> reference(leaves, 0.0);
  rng r(5);
  for (std::size_t i = 0; i < leaves; ++i) {
    // A third of the leaves stay zero: they must never be found.
    reference[i] = r.below(3) == 0 ? 0.0 : r.uniform(0.0, 4.0);
    sum.set(i, reference[i]);
  }
  for (int draw = 0; draw < 5000; ++draw) {
    const double mass = r.uniform() * sum.total();
    std::size_t expected = 0;
    double prefix = 0.0;
    while (expected < leaves && !(mass < prefix + reference[expected] && reference[expected] > 0.0)) {
      prefix += reference[expected];
      ++expected;
    }
    // Near a boundary the two summation orders may round to either side.
    const std::size_t found = sum.find_prefix(mass);
    REQUIRE(reference[found] > 0.0);
    if (expected < leaves && std::abs(mass - prefix) > 1e-9 && std::abs(mass - prefix - reference[expected]) > 1e-9) {
      REQUIRE(found == expected);
    }
  }
}

TEST_CASE("find_prefix never lands on a zero leaf at the very end of the mass", "[replay][segment_tree]") {
  sum_tree sum(20);
  sum.set(3, 0.1);
  sum.set(4, 0.2);
  CHECK(sum.find_prefix(sum.total()) == 4);
  CHECK(sum.find_prefix(std::nextafter(sum.total(), 1.0)) == 4);
  CHECK(sum.find_prefix(0.0) == 3);
}
