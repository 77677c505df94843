#include "coral/replay/priority_tree.hpp"
#include "coral/replay/detail/divider.hpp"
#include "coral/core/huge_page_allocator.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "coral/core/rng.hpp"

using coral::rng;
using coral::replay::priority_tree;

namespace {

constexpr float infinity = std::numeric_limits<float>::infinity();

// Relative to the sum's magnitude: the tree adds in a different order.
bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

double brute_sum(const std::vector<float>& leaves) {
  double s = 0.0;
  for (const float x : leaves) s += x;
  return s;
}

float brute_min(const std::vector<float>& leaves) {
  float m = infinity;
  for (const float x : leaves) {
    if (x > 0.0f) m = std::min(m, x);
  }
  return m;
}

// The leaf a linear prefix-sum scan finds for `mass`, skipping zero leaves;
// leaves.size() when the mass is past the end.
std::size_t brute_find(const std::vector<float>& leaves, double mass, double& prefix) {
  std::size_t i = 0;
  prefix = 0.0;
  while (i < leaves.size() && !(mass < prefix + leaves[i] && leaves[i] > 0.0f)) prefix += leaves[i++];
  return i;
}

// Random leaves, a third of them absent.
float random_leaf(rng& r) { return r.below(3) == 0 ? 0.0f : static_cast<float>(r.uniform(0.01, 10.0)); }

}  // namespace

TEST_CASE("the sum and the minimum of present leaves match brute force after random updates",
          "[replay][priority_tree]") {
  for (const std::size_t size : {1u, 7u, 15u, 16u, 17u, 100u, 129u, 1000u, 5000u}) {
    INFO("size " << size);
    priority_tree tree(size);
    std::vector<float> reference(size, 0.0f);
    CHECK(tree.total() == 0.0);
    CHECK(tree.min() == infinity);
    rng r(size);
    for (int step = 0; step < 1500; ++step) {
      const auto kind = r.below(4);
      if (kind == 0) {  // a contiguous run through leaf_data and refresh
        const std::size_t first = r.below(size);
        const std::size_t count = 1 + r.below(size - first);
        for (std::size_t i = first; i < first + count; ++i) reference[i] = tree.leaf_data()[i] = random_leaf(r);
        tree.refresh(first, first + count);
      } else if (kind == 1) {  // a batch with repeats, sorted or not
        std::vector<std::size_t> idx(1 + r.below(300));
        std::vector<float> values(idx.size());
        for (std::size_t k = 0; k < idx.size(); ++k) {
          idx[k] = r.below(size);
          values[k] = random_leaf(r);
        }
        if (r.bernoulli(0.5)) std::sort(idx.begin(), idx.end());
        for (std::size_t k = 0; k < idx.size(); ++k) reference[idx[k]] = values[k];  // the last one wins
        tree.set_many(idx, values);
      } else {
        const std::size_t i = r.below(size);
        reference[i] = random_leaf(r);
        tree.set(i, reference[i]);
      }
      REQUIRE(close(tree.total(), brute_sum(reference)));
      REQUIRE(tree.min() == brute_min(reference));
    }
    for (std::size_t i = 0; i < size; ++i) CHECK(tree.get(i) == reference[i]);
  }
}

TEST_CASE("raising or removing the smallest leaf raises the minimum", "[replay][priority_tree]") {
  priority_tree tree(1000);
  std::vector<std::size_t> idx(1000);
  std::iota(idx.begin(), idx.end(), 0);
  std::vector<float> values(1000);
  for (std::size_t i = 0; i < 1000; ++i) values[i] = 1.0f + static_cast<float>(i);
  tree.set_many(idx, values);
  CHECK(tree.min() == 1.0f);
  const std::vector<std::size_t> first{0};
  tree.set_many(first, std::vector<float>{5000.0f});
  CHECK(tree.min() == 2.0f);
  tree.set_many(std::vector<std::size_t>{1, 999}, std::vector<float>{0.0f, 0.5f});  // absent, and a new minimum
  CHECK(tree.min() == 0.5f);
  tree.set(999, 0.0f);
  CHECK(tree.min() == 3.0f);
  CHECK(tree.total() == Approx(brute_sum(values) - 1.0 + 5000.0 - 2.0 - 1000.0));
}

TEST_CASE("find_prefix and find_prefix_many return the leaf a linear prefix-sum scan finds",
          "[replay][priority_tree]") {
  for (const std::size_t size : {1u, 16u, 33u, 777u, 5000u, 40000u}) {
    INFO("size " << size);
    priority_tree tree(size);
    std::vector<float> reference(size);
    rng r(5 + size);
    for (std::size_t i = 0; i < size; ++i) reference[i] = random_leaf(r);
    reference[size / 2] = 1.0f;  // at least one present leaf
    std::copy(reference.begin(), reference.end(), tree.leaf_data());
    tree.refresh(0, size);
    const double total = tree.total();
    // Stratified (sorted) batches of several sizes, so the merge of the top
    // levels runs at several depths, and shuffled ones.
    for (const std::size_t batch : {1u, 8u, 64u, 256u, 1024u}) {
      std::vector<double> masses(batch);
      for (std::size_t i = 0; i < batch; ++i) {
        masses[i] = (static_cast<double>(i) + r.uniform()) * total / static_cast<double>(batch);
      }
      if (batch % 3 == 1) std::shuffle(masses.begin(), masses.end(), std::mt19937_64(batch));
      const std::vector<double> kept = masses;
      std::vector<std::size_t> found(batch);
      std::vector<std::size_t> seen;
      tree.find_prefix_many(masses, found, [&seen](std::size_t leaf) { seen.push_back(leaf); });
      REQUIRE(seen == found);
      for (std::size_t i = 0; i < batch; ++i) {
        double prefix = 0.0;
        const std::size_t expected = brute_find(reference, kept[i], prefix);
        REQUIRE(found[i] < size);
        REQUIRE(reference[found[i]] > 0.0f);
        REQUIRE(tree.find_prefix(kept[i]) == found[i]);
        // Near a boundary the summation orders may round to either side.
        const double tolerance = 1e-9 * std::max(1.0, total);
        if (expected < size && std::abs(kept[i] - prefix) > tolerance &&
            std::abs(kept[i] - prefix - reference[expected]) > tolerance) {
          REQUIRE(found[i] == expected);
        }
      }
    }
  }
}

TEST_CASE("find_prefix never lands on an absent leaf at the very end of the mass", "[replay][priority_tree]") {
  for (const std::size_t size : {20u, 5000u}) {
    priority_tree tree(size);
    tree.set(3, 0.1f);
    tree.set(4, 0.2f);
    CHECK(tree.find_prefix(tree.total()) == 4);
    CHECK(tree.find_prefix(std::nextafter(tree.total(), 1.0)) == 4);
    CHECK(tree.find_prefix(0.0) == 3);
    std::vector<double> masses(200, tree.total());
    masses[0] = 0.0;
    std::vector<std::size_t> found(200);
    tree.find_prefix_many(masses, found);
    CHECK(found[0] == 3);
    for (std::size_t i = 1; i < 200; ++i) REQUIRE(found[i] == 4);
  }
}

TEST_CASE("find_prefix_many finds, for every mass, the leaf find_prefix finds alone", "[replay][priority_tree]") {
  // Sizes around a group of 16 (the last group partial or not) and a million
  // (levels merged and descended); a third of the leaves absent.
  for (const std::size_t size : {1u, 15u, 16u, 17u, 1'000'000u}) {
    INFO("size " << size);
    priority_tree tree(size);
    rng r(17 + size);
    for (std::size_t i = 0; i < size; ++i) tree.leaf_data()[i] = random_leaf(r);
    tree.leaf_data()[size - 1] = 0.5f;  // at least one present leaf, in the last group
    tree.refresh(0, size);
    const double total = tree.total();
    // At a million, batches of 256 and 1,024 pass the top levels by the
    // search (where the CPU has AVX-512), 4,096 by the merge (a level of
    // 977 nodes, wider than the search's table).
    for (const std::size_t batch : {1u, 31u, 256u, 1024u, 4096u}) {
      for (const bool sorted : {true, false}) {
        std::vector<double> masses(batch);
        for (std::size_t i = 0; i < batch; ++i) {
          masses[i] = (static_cast<double>(i) + r.uniform()) * total / static_cast<double>(batch);
        }
        // Just below the end, where rounding matters most. (At or past the
        // end, outside find_prefix's contract, both land in a present leaf,
        // not always the same one: the test above.)
        masses.back() = std::nextafter(total, 0.0);
        if (!sorted) std::shuffle(masses.begin(), masses.end(), std::mt19937_64(batch));
        const std::vector<double> kept = masses;
        std::vector<std::size_t> found(batch);
        tree.find_prefix_many(masses, found);
        for (std::size_t i = 0; i < batch; ++i) {
          REQUIRE(found[i] == tree.find_prefix(kept[i]));
          REQUIRE(tree.get(found[i]) > 0.0f);
        }
      }
    }
  }
}

TEST_CASE("the tree is a function of its leaves: rebuilt from them it is the same bit for bit",
          "[replay][priority_tree]") {
  for (const std::size_t size : {17u, 5000u, 100'000u}) {
    INFO("size " << size);
    priority_tree tree(size);
    rng r(3 + size);
    for (int round = 0; round < 200; ++round) {
      std::vector<std::size_t> idx(1 + r.below(256));
      std::vector<float> values(idx.size());
      for (std::size_t k = 0; k < idx.size(); ++k) {
        idx[k] = r.below(size);
        values[k] = random_leaf(r);
      }
      if (r.bernoulli(0.5)) std::sort(idx.begin(), idx.end());  // a stratified sample's order, or any
      tree.set_many(idx, values);
      tree.set(r.below(size), random_leaf(r));
    }
    priority_tree rebuilt(size);
    std::copy(tree.leaf_data(), tree.leaf_data() + size, rebuilt.leaf_data());
    rebuilt.refresh(0, size);
    CHECK(std::bit_cast<std::uint64_t>(rebuilt.total()) == std::bit_cast<std::uint64_t>(tree.total()));
    CHECK(rebuilt.min() == tree.min());
    for (int i = 0; i < 1000; ++i) {
      const double mass = r.uniform() * tree.total();
      REQUIRE(rebuilt.find_prefix(mass) == tree.find_prefix(mass));
    }
  }
}

TEST_CASE("the SIMD line kernels give the bits of their plain C++ twins", "[replay][priority_tree]") {
  namespace k = coral::replay::detail;
  rng r(99);
  alignas(64) float leaves[16];
  alignas(64) double row[8];
  alignas(64) float row_mins[8];
  for (int round = 0; round < 20000; ++round) {
    // Leaves with zeros, ties and wide magnitudes; masses around the ends.
    for (float& x : leaves) x = r.below(3) == 0 ? 0.0f : static_cast<float>(std::ldexp(r.uniform(0.5, 1.0), static_cast<int>(r.below(40)) - 20));
    for (double& x : row) x = r.below(4) == 0 ? 0.0 : r.uniform(0.0, 100.0);
    for (float& x : row_mins) x = r.below(4) == 0 ? infinity : static_cast<float>(r.uniform(0.01, 10.0));
    REQUIRE(std::bit_cast<std::uint64_t>(k::group_sum(leaves)) == std::bit_cast<std::uint64_t>(k::scalar::group_sum(leaves)));
    REQUIRE(k::group_min(leaves) == k::scalar::group_min(leaves));
    REQUIRE(std::bit_cast<std::uint64_t>(k::row_sum(row)) == std::bit_cast<std::uint64_t>(k::scalar::row_sum(row)));
    REQUIRE(k::row_min(row_mins) == k::scalar::row_min(row_mins));
  }
}

TEST_CASE("row_pick and group_pick find the child a linear scan finds, never a zero one", "[replay][priority_tree]") {
  namespace k = coral::replay::detail;
  rng r(5);
  alignas(64) float leaves[16];
  alignas(64) double row[8];
  // The child a linear prefix scan finds, skipping zeros; n past the end.
  const auto scan = [](const auto* c, int n, double mass, double& before) {
    before = 0.0;
    int i = 0;
    while (i < n && !(mass < before + static_cast<double>(c[i]) && c[i] > 0)) before += static_cast<double>(c[i++]);
    return static_cast<unsigned>(i);
  };
  for (int round = 0; round < 20000; ++round) {
    // Whole numbers up to 1000, half of them zero: every sum is exact, so
    // the halving and the scan must agree everywhere, ends included.
    for (float& x : leaves) x = r.below(2) == 0 ? 0.0f : static_cast<float>(1 + r.below(1000));
    for (double& x : row) x = r.below(2) == 0 ? 0.0 : static_cast<double>(1 + r.below(1000));
    leaves[r.below(16)] = 1.0f;
    row[r.below(8)] = 1.0;
    const double leaf_total = k::scalar::group_sum(leaves);
    const double row_total = k::scalar::row_sum(row);
    // Masses anywhere, on whole numbers (the boundaries) and at the end.
    for (const double leaf_mass : {r.uniform() * leaf_total, std::floor(r.uniform() * leaf_total), leaf_total,
                                   std::nextafter(leaf_total, 0.0), 0.0}) {
      double before = 0.0;
      const unsigned expected = scan(leaves, 16, leaf_mass, before);
      const unsigned c = k::group_pick(leaves, leaf_mass);
      REQUIRE(c == expected);
      if (c < 16) REQUIRE(leaves[c] > 0.0f);
    }
    for (const double row_mass : {r.uniform() * row_total, std::floor(r.uniform() * row_total), row_total,
                                  std::nextafter(row_total, 0.0), 0.0}) {
      double before = 0.0;
      const unsigned expected = scan(row, 8, row_mass, before);
      double mass = row_mass;
      const unsigned c = k::row_pick(row, mass);
      REQUIRE(c == expected);
      if (c < 8) {
        REQUIRE(row[c] > 0.0);
        REQUIRE(mass == row_mass - before);  // the remainder within the child
      } else {
        REQUIRE(mass == row_mass);  // past the end: untouched
      }
    }
  }
  // Magnitudes 2^-20 to 2^20, where sums round: the pick may differ from the
  // scan by a rounding at a boundary, but it is never a zero child, and a
  // remainder is not negative and inside its child or past it by at most an
  // ulp of the end it was below (the child's own line then takes it as past
  // its end).
  for (int round = 0; round < 20000; ++round) {
    for (float& x : leaves) x = r.below(3) == 0 ? 0.0f : static_cast<float>(std::ldexp(r.uniform(0.5, 1.0), static_cast<int>(r.below(40)) - 20));
    for (double& x : row) x = r.below(3) == 0 ? 0.0 : std::ldexp(r.uniform(0.5, 1.0), static_cast<int>(r.below(40)) - 20);
    // The rule's premise: ends never decrease, and a zero child's end is the
    // end before it, bit for bit.
    double leaf_ends[16];
    k::scalar::running_ends(leaves, 16, leaf_ends);
    for (int i = 0; i < 16; ++i) {
      const double before = i == 0 ? 0.0 : leaf_ends[i - 1];
      REQUIRE(leaf_ends[i] >= before);
      if (leaves[i] == 0.0f) REQUIRE(std::bit_cast<std::uint64_t>(leaf_ends[i]) == std::bit_cast<std::uint64_t>(before));
    }
    const double leaf_mass = r.uniform(0.0, 1.01) * k::scalar::group_sum(leaves);
    const unsigned c = k::group_pick(leaves, leaf_mass);
    if (c < 16) REQUIRE(leaves[c] > 0.0f);
    double mass = r.uniform(0.0, 1.01) * k::scalar::row_sum(row);
    const unsigned j = k::row_pick(row, mass);
    if (j < 8) {
      double ends[8];
      k::scalar::running_ends(row, 8, ends);
      REQUIRE(row[j] > 0.0);
      REQUIRE(mass >= 0.0);
      REQUIRE(mass <= row[j] + std::ldexp(ends[j], -52));
    }
  }
}

TEST_CASE("every instruction set's descent gives the bits of the plain C++ picks, roundings included",
          "[replay][priority_tree]") {
  namespace k = coral::replay::detail;
  const std::vector<k::isa> isas = k::available_isas();
  INFO(isas.size() << " instruction set(s) compared: the baseline, then AVX2 and AVX-512 where this CPU has them");
  rng r(21);
  constexpr std::size_t rows = 64;
  constexpr std::size_t draws = 256;
  // A level of `rows` rows of 8 and as many groups of 16 leaves; the
  // descent's next line is a level of 64 * 8 lines it only prefetches.
  coral::huge_vector<double> level(rows * 8);  // cache-line aligned, as the tree's lines
  coral::huge_vector<float> leaves(rows * 16);
  std::vector<double> next(rows * 8 * 8);
  std::size_t parted = 0;  // groups where counting the ends and walking the leaves part
  // The leaf a walk finds that subtracts each leaf the mass is not below.
  const auto walk = [](const float* group, double mass) {
    unsigned l = 0;
    while (l < 16 && !(mass < static_cast<double>(group[l]))) mass -= static_cast<double>(group[l++]);
    return l;
  };
  for (int round = 0; round < 400; ++round) {
    // Whole numbers (exact sums), magnitudes 2^-30 to 2^30 (sums round),
    // and lines of one huge and many tiny children (ends that tie, and tiny
    // children a sum absorbs); a third of the children zero.
    const int kind = round % 3;
    const auto child = [&]() -> double {
      if (r.below(3) == 0) return 0.0;
      if (kind == 0) return static_cast<double>(1 + r.below(1000));
      if (kind == 1) return std::ldexp(r.uniform(0.5, 1.0), static_cast<int>(r.below(60)) - 30);
      return r.below(8) == 0 ? 1.0 : std::ldexp(r.uniform(0.5, 1.0), -53 - static_cast<int>(r.below(3)));
    };
    for (double& x : level) x = child();
    for (float& x : leaves) x = static_cast<float>(child());
    // The tree descends only into lines with mass.
    for (std::size_t j = 0; j < rows; ++j) {
      level[j * 8 + r.below(8)] = 1.0;
      leaves[j * 16 + r.below(16)] = 1.0f;
    }
    std::vector<std::size_t> nodes(draws), groups(draws);
    std::vector<double> masses(draws);
    for (std::size_t i = 0; i < draws; ++i) {
      nodes[i] = r.below(rows);
      groups[i] = r.below(rows);
      const double row_total = k::scalar::row_sum(level.data() + nodes[i] * 8);
      const double group_total = k::scalar::group_sum(leaves.data() + groups[i] * 16);
      // Anywhere, on a running end, and at or past the end.
      const std::size_t where = r.below(8);
      const double total = i % 2 == 0 ? row_total : group_total;
      masses[i] = where == 0 ? total : where == 1 ? std::nextafter(total, 0.0) : r.uniform(0.0, 1.0) * total;
      if (where == 2) {
        double ends[8];
        k::scalar::running_ends(level.data() + nodes[i] * 8, 8, ends);
        masses[i] = ends[r.below(8)];
      }
    }
    // The plain C++ picks, draw by draw, with the past-the-end rule.
    std::vector<std::size_t> want_nodes(draws), want_leaves(draws);
    std::vector<double> want_masses = masses;
    for (std::size_t i = 0; i < draws; ++i) {
      const double* row = level.data() + nodes[i] * 8;
      double before = want_masses[i];
      unsigned c = k::scalar::row_pick(row, want_masses[i]);
      if (c == 8) c = k::past_end(row, 8, want_masses[i]);
      double row_ends[8];
      k::scalar::running_ends(row, 8, row_ends);
      REQUIRE(row[c] > 0.0);
      REQUIRE(want_masses[i] >= 0.0);
      REQUIRE(want_masses[i] <= row[c] + std::ldexp(row_ends[c], -52));
      want_nodes[i] = nodes[i] * 8 + c;
      const float* group = leaves.data() + groups[i] * 16;
      unsigned l = k::scalar::group_pick(group, masses[i]);
      if (l == 16) l = k::past_end(group, 16, before);
      REQUIRE(group[l] > 0.0f);
      want_leaves[i] = groups[i] * 16 + l;
      parted += walk(group, masses[i]) != l ? 1 : 0;
    }
    for (const k::isa isa : isas) {
      INFO("isa " << static_cast<int>(isa) << ", round " << round);
      std::vector<std::size_t> got_nodes = nodes, got_leaves = groups;
      std::vector<double> got_masses = masses;
      k::descend(isa, level.data(), got_nodes.data(), got_masses.data(), draws, next.data());
      k::pick_leaves(isa, leaves.data(), got_leaves.data(), masses.data(), draws);
      for (std::size_t i = 0; i < draws; ++i) {
        REQUIRE(got_nodes[i] == want_nodes[i]);
        REQUIRE(std::bit_cast<std::uint64_t>(got_masses[i]) == std::bit_cast<std::uint64_t>(want_masses[i]));
        REQUIRE(got_leaves[i] == want_leaves[i]);
      }
    }
  }
  // The mixed lines must reach draws where counting and walking part:
  // otherwise the comparison above never met a rounding at a boundary.
  CHECK(parted > 0);
}

TEST_CASE("every instruction set's group refresh writes the leaves and gives the bits of the plain C++ sums and minima",
          "[replay][priority_tree]") {
  namespace k = coral::replay::detail;
  const std::vector<k::isa> isas = k::available_isas();
  INFO(isas.size() << " instruction set(s) compared: the baseline, then AVX2 and AVX-512 where this CPU has them");
  rng r(23);
  constexpr std::size_t groups = 64;
  constexpr std::size_t n = 200;
  constexpr std::size_t lag = k::prefetch_distance;  // how far the writes lead the groups
  const auto random_leaf_value = [&] {
    // Whole numbers, magnitudes 2^-60 to 2^60 (sums round differently in
    // every order), and zeros of both signs (absent, both).
    const std::size_t kind = r.below(4);
    return kind == 0   ? (r.below(2) == 0 ? 0.0f : -0.0f)
           : kind == 1 ? static_cast<float>(1 + r.below(1000))
                       : static_cast<float>(std::ldexp(r.uniform(0.5, 1.0), static_cast<int>(r.below(120)) - 60));
  };
  for (int round = 0; round < 300; ++round) {
    // The leaves before the call; the draws (with repeats, sorted or not)
    // write new values, the last one for a leaf winning, and now and then
    // empty a whole group.
    std::vector<float> before(groups * 16);
    for (float& x : before) x = random_leaf_value();
    std::vector<std::size_t> idx(n);
    for (std::size_t& i : idx) i = r.below(groups * 16);
    const std::size_t empty = r.below(groups);
    for (std::size_t l = 0; l < 16; ++l) idx[l] = empty * 16 + l;
    if (round % 2 == 0) std::sort(idx.begin(), idx.end());
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = idx[i] / 16 == empty ? (i % 2 == 0 ? 0.0f : -0.0f) : random_leaf_value();
    std::vector<float> after = before;
    for (std::size_t i = 0; i < n; ++i) after[idx[i]] = values[i];
    // Minima that start at random values, so that some move and some do not.
    std::vector<float> start_mins(groups);
    for (std::size_t g = 0; g < groups; ++g) start_mins[g] = r.below(2) == 0 ? k::scalar::group_min(&before[g * 16]) : 1.0f;
    // Expected: the leaves as `after`; each group's sum and minimum those of
    // its final leaves; and a group listed each time its recompute, which
    // sees the writes of the draws up to `lag` ahead, found its minimum
    // moved.
    std::vector<float> want_mins = start_mins;
    std::vector<std::size_t> want_changed;
    {
      std::vector<float> seen = before;
      std::size_t written = 0;
      for (std::size_t i = 0; i < n; ++i) {
        for (; written < std::min(n, i + lag + 1); ++written) seen[idx[written]] = values[written];
        const std::size_t g = idx[i] / 16;
        const float m = k::scalar::group_min(&seen[g * 16]);
        if (m != want_mins[g]) want_changed.push_back(g);
        want_mins[g] = m;
      }
    }
    for (const k::isa isa : isas) {
      INFO("isa " << static_cast<int>(isa) << ", round " << round);
      coral::huge_vector<float> leaves(before.begin(), before.end());
      std::vector<double> sums(groups, -1.0);
      std::vector<float> mins = start_mins;
      std::vector<std::size_t> changed(n);
      changed.resize(
          k::refresh_groups(isa, leaves.data(), values.data(), sums.data(), mins.data(), idx.data(), n, changed.data()));
      REQUIRE(std::equal(leaves.begin(), leaves.end(), after.begin()));
      for (const std::size_t i : idx) {
        const std::size_t g = i / 16;
        REQUIRE(std::bit_cast<std::uint64_t>(sums[g]) == std::bit_cast<std::uint64_t>(k::scalar::group_sum(&after[g * 16])));
        REQUIRE(mins[g] == k::scalar::group_min(&after[g * 16]));
      }
      REQUIRE(mins == want_mins);
      REQUIRE(changed == want_changed);
      REQUIRE(mins[empty] == infinity);
    }
  }
}

TEST_CASE("divider gives n / d by a multiplication where both fit in 32 bits, and divides elsewhere",
          "[replay][priority_tree]") {
  rng r(11);
  const std::uint64_t edges[] = {1, 2, 3, 7, 16, 1000, 1'000'000, 0xffffffffu, 0x100000000ull, 0x123456789abull};
  for (const std::uint64_t d : edges) {
    const coral::replay::detail::divider div(d);
    for (const std::uint64_t n : edges) REQUIRE(div.quotient(n) == n / d);
    REQUIRE(div.quotient(0) == 0);
    for (int i = 0; i < 20000; ++i) {
      const std::uint64_t n = r.below(2) == 0 ? r.below(0x100000000ull) : r();
      REQUIRE(div.quotient(n) == n / d);
    }
  }
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t d = 1 + r.below(0xffffffffu);
    const coral::replay::detail::divider div(d);
    for (int j = 0; j < 100; ++j) {
      const std::uint64_t n = r.below(0x100000000ull);
      REQUIRE(div.quotient(n) == n / d);
    }
  }
}

TEST_CASE("the search over a whole level gives the node and remainder of a left-to-right merge, bit for bit",
          "[replay][priority_tree]") {
  namespace k = coral::replay::detail;
  rng r(31);
  std::size_t searched = 0;
  const auto bits = [](double x) { return std::bit_cast<std::uint64_t>(x); };
  for (const k::isa isa : k::available_isas()) {
    for (int round = 0; round < 900; ++round) {
      INFO("isa " << static_cast<int>(isa) << ", round " << round);
      const std::size_t width = 1 + r.below(128);
      // As in the descent's test: whole numbers, magnitudes 2^-30 to 2^30,
      // one huge child among tiny ones; a third zero; now and then all zero.
      const int kind = round % 4;
      coral::huge_vector<double> level(width);
      for (double& x : level) {
        if (kind == 3 || r.below(3) == 0) {
          x = 0.0;
        } else if (kind == 0) {
          x = static_cast<double>(1 + r.below(1000));
        } else if (kind == 1) {
          x = std::ldexp(r.uniform(0.5, 1.0), static_cast<int>(r.below(60)) - 30);
        } else {
          x = r.below(8) == 0 ? 1e12 : 1e-6 * r.uniform(0.5, 1.0);
        }
      }
      // The merge's running ends, and masses at them, an ulp below them,
      // at random inside, at zero and at or past the level's end.
      std::vector<double> ends(width);
      double run = 0.0;
      for (std::size_t j = 0; j < width; ++j) ends[j] = run = run + level[j];
      const std::size_t n = 1 + r.below(300);
      std::vector<double> masses(n);
      for (double& m : masses) {
        const double end = ends[r.below(width)];
        switch (r.below(7)) {
          case 6: m = std::numeric_limits<double>::infinity(); break;  // outside the contract; read nothing past the table
          case 0: m = end; break;
          case 1: m = end > 0.0 ? std::nextafter(end, 0.0) : 0.0; break;
          case 2: m = 0.0; break;
          case 3: m = run * (1.0 + 0x1p-52 * static_cast<double>(r.below(3))); break;
          default: m = r.uniform() * run;
        }
      }
      if (round % 2 == 0) std::sort(masses.begin(), masses.end());
      std::vector<double> remainders = masses;
      std::vector<std::size_t> nodes(n, 7777);
      std::vector<double> next(width * 8);  // only prefetched
      if (!k::search_level(isa, level.data(), width, nodes.data(), remainders.data(), n, next.data())) {
        REQUIRE(nodes == std::vector<std::size_t>(n, 7777));
        for (std::size_t i = 0; i < n; ++i) REQUIRE(bits(remainders[i]) == bits(masses[i]));
        continue;
      }
      for (std::size_t i = 0; i < n; ++i) {
        INFO("draw " << i << " of mass " << masses[i] << " over a level of " << width);
        // The merge: the first node whose end is above the mass, the last
        // taking the rest; at or past its end, the last node with mass.
        std::size_t j = 0;
        double before = 0.0;
        while (j + 1 < width && !(masses[i] < before + level[j])) before += level[j++];
        double remainder = masses[i] - before;
        if (j + 1 == width && before + level[j] <= masses[i]) {
          while (j > 0 && !(level[j] > 0.0)) --j;
          remainder = level[j] * 0.5;
        }
        REQUIRE(nodes[i] == j);
        REQUIRE(bits(remainders[i]) == bits(remainder));
        if (run > 0.0) REQUIRE(level[j] > 0.0);
        ++searched;
      }
    }
    // Wider than the kernel's table: nothing written, the caller merges.
    coral::huge_vector<double> wide(129, 1.0);
    std::size_t node = 5;
    double mass = 3.0;
    REQUIRE_FALSE(k::search_level(isa, wide.data(), wide.size(), &node, &mass, 1, wide.data()));
    REQUIRE(node == 5);
    REQUIRE(mass == 3.0);
  }
  INFO(searched << " draws searched (none without AVX-512: the tree then merges)");
  if (k::isa_available(k::isa::avx512)) REQUIRE(searched > 0);
}
