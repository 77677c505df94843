#include "coral/replay/priority_tree.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "coral/envs/rng.hpp"

using coral::envs::rng;
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
