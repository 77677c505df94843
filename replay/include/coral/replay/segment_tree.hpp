#pragma once
/// \file
/// `sum_tree` and `min_tree`: the segment trees behind proportional
/// prioritized replay (Schaul et al. 2016).
///
/// Both are 8-ary trees over a fixed number of leaves, stored level by level.
/// The 8 children of a node are 8 doubles, one 64-byte cache line, so a
/// descent or an update over a million leaves touches 7 cache lines instead of
/// a binary tree's 20. A parent is always recomputed from its 8 children,
/// never adjusted by a delta, so rounding errors do not accumulate over
/// millions of updates.
///
/// Thread safety: none; the replay actor owns its trees.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <span>
#include <vector>

namespace coral::replay {

namespace detail {

/// Combines 8 children into their parent.
struct sum_combine {
  static constexpr double identity = 0.0;
  static double combine(const double* c) noexcept {
    return ((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]));
  }
};

/// Combines 8 children into their parent.
struct min_combine {
  static constexpr double identity = std::numeric_limits<double>::infinity();
  static double combine(const double* c) noexcept {
    return std::min(std::min(std::min(c[0], c[1]), std::min(c[2], c[3])),
                    std::min(std::min(c[4], c[5]), std::min(c[6], c[7])));
  }
};

/// An 8-ary segment tree; Combine gives the identity and the reduction.
template <class Combine>
class segment_tree {
 public:
  /// Children per node.
  static constexpr std::size_t fanout = 8;
  /// log2(fanout).
  static constexpr std::size_t fanout_bits = 3;
  /// How many items ahead the batch operations prefetch.
  static constexpr std::size_t prefetch_distance = 16;

  /// A tree over `leaves` leaves, every one holding the identity.
  explicit segment_tree(std::size_t leaves) : leaves_(leaves) {
    std::size_t width = 1;
    std::vector<std::size_t> widths{1};
    while (width < std::max<std::size_t>(leaves, 1)) {
      width *= fanout;
      widths.push_back(width);
    }
    // Level offsets in a single buffer; every level below the root starts on a
    // multiple of 8 doubles, so each group of siblings is one aligned line.
    std::size_t offset = 0;
    for (const std::size_t w : widths) {
      offsets_.push_back(offset);
      offset += std::max<std::size_t>(w, fanout);
    }
    storage_.resize(offset + fanout, Combine::identity);
    const auto misalign = reinterpret_cast<std::uintptr_t>(storage_.data()) % 64 / sizeof(double);
    base_ = storage_.data() + (misalign == 0 ? 0 : fanout - misalign);
  }

  segment_tree(const segment_tree&) = delete;
  segment_tree& operator=(const segment_tree&) = delete;
  segment_tree(segment_tree&&) noexcept = default;  // the vector's buffer, and base_ into it, move along
  segment_tree& operator=(segment_tree&&) noexcept = default;

  /// Number of leaves.
  [[nodiscard]] std::size_t size() const noexcept { return leaves_; }

  /// The reduction over every leaf (the root).
  [[nodiscard]] double total() const noexcept { return base_[0]; }

  /// Value of leaf i (i < size(), unchecked).
  [[nodiscard]] double get(std::size_t i) const noexcept { return level(depth())[i]; }

  /// Sets leaf i to `value` and recomputes its ancestors (i < size(), unchecked).
  void set(std::size_t i, double value) noexcept {
    level(depth())[i] = value;
    for (std::size_t d = depth(); d > 0; --d) {
      const std::size_t parent = i / fanout;
      level(d - 1)[parent] = Combine::combine(level(d) + parent * fanout);
      i = parent;
    }
  }

  /// Sets leaf idx[i] to values[i] for every i and recomputes their
  /// ancestors, level by level across the whole batch so that the cache
  /// misses of distinct leaves overlap (with prefetches a few items ahead)
  /// instead of following one another. Indices may repeat; the last value
  /// written wins. Unchecked.
  void set_many(std::span<const std::size_t> idx, std::span<const double> values) noexcept {
    const std::size_t n = idx.size();
    double* leaves = level(depth());
    for (std::size_t i = 0; i < n; ++i) {
      if (i + prefetch_distance < n) __builtin_prefetch(leaves + idx[i + prefetch_distance], 1);
      leaves[idx[i]] = values[i];
    }
    std::size_t shift = fanout_bits;
    for (std::size_t d = depth(); d > 0; --d, shift += fanout_bits) {
      double* parents = level(d - 1);
      const double* children = level(d);
      for (std::size_t i = 0; i < n; ++i) {
        if (i + prefetch_distance < n) __builtin_prefetch(parents + (idx[i + prefetch_distance] >> shift), 1);
        const std::size_t p = idx[i] >> shift;
        parents[p] = Combine::combine(children + p * fanout);
      }
    }
  }

  /// Sets leaves [first, first + values.size()) and recomputes their
  /// ancestors once per level: O(count + depth) for a contiguous run.
  void set_range(std::size_t first, std::span<const double> values) noexcept {
    if (values.empty()) return;
    std::copy(values.begin(), values.end(), level(depth()) + first);
    refresh(first, first + values.size());
  }

  /// Recomputes the ancestors of leaves [first, last) after their values were
  /// written through leaf_data().
  void refresh(std::size_t first, std::size_t last) noexcept {
    if (first >= last) return;
    std::size_t lo = first, hi = last - 1;
    for (std::size_t d = depth(); d > 0; --d) {
      lo /= fanout;
      hi /= fanout;
      double* parents = level(d - 1);
      const double* children = level(d);
      for (std::size_t p = lo; p <= hi; ++p) parents[p] = Combine::combine(children + p * fanout);
    }
  }

  /// The leaves, for bulk writes followed by refresh().
  [[nodiscard]] double* leaf_data() noexcept { return level(depth()); }

 protected:
  [[nodiscard]] std::size_t depth() const noexcept { return offsets_.size() - 1; }
  [[nodiscard]] double* level(std::size_t d) noexcept { return base_ + offsets_[d]; }
  [[nodiscard]] const double* level(std::size_t d) const noexcept { return base_ + offsets_[d]; }

 private:
  std::size_t leaves_;
  std::vector<std::size_t> offsets_;
  std::vector<double> storage_;
  double* base_ = nullptr;
};

}  // namespace detail

/// Sums of non-negative leaf values, and the leaf where a prefix sum falls.
class sum_tree : public detail::segment_tree<detail::sum_combine> {
 public:
  /// A tree over `leaves` leaves, all zero.
  explicit sum_tree(std::size_t leaves) : segment_tree(leaves) {}

  /// The smallest leaf i with (sum of leaves before i) <= mass < (that sum +
  /// leaf i), for 0 <= mass < total(). Never returns a zero leaf while
  /// total() > 0: where rounding puts `mass` at or past the end of a subtree,
  /// the descent stays in a sibling that has mass.
  [[nodiscard]] std::size_t find_prefix(double mass) const noexcept {
    std::size_t node = 0;
    for (std::size_t d = 1; d <= depth(); ++d) node = step(level(d), node, mass);
    return node;
  }

  /// find_prefix for every masses[i], into leaves[i]; descends all of them
  /// level by level so that their cache misses overlap. `masses` is used as
  /// scratch and left unspecified. Same sizes, unchecked.
  void find_prefix_many(std::span<double> masses, std::span<std::size_t> leaves) const noexcept {
    const std::size_t n = masses.size();
    for (std::size_t i = 0; i < n; ++i) leaves[i] = 0;
    for (std::size_t d = 1; d <= depth(); ++d) {
      const double* children = level(d);
      for (std::size_t i = 0; i < n; ++i) {
        if (i + prefetch_distance < n) __builtin_prefetch(children + leaves[i + prefetch_distance] * fanout);
        leaves[i] = step(children, leaves[i], masses[i]);
      }
    }
  }

 private:
  // One level of the descent: the child of `node` where `mass` falls; `mass`
  // becomes the remainder within that child.
  static std::size_t step(const double* level_values, std::size_t node, double& mass) noexcept {
    const double* children = level_values + node * fanout;
    // Branch-free: c counts the children whose running end is <= mass, so c
    // is the child where mass falls, zero-mass children skipped (their end
    // ties with the one before). A random descent mispredicts a branchy scan
    // at almost every level.
    double ends[fanout];
    double acc = 0.0;
    std::size_t c = 0;
    for (std::size_t k = 0; k < fanout; ++k) {
      acc += children[k];
      ends[k] = acc;
      c += ends[k] <= mass ? 1 : 0;
    }
    if (c == fanout) [[unlikely]] {
      // Past the end by rounding: land inside the last child with mass.
      c = fanout - 1;
      while (c > 0 && !(children[c] > 0.0)) --c;
      mass = children[c] * 0.5;
      return node * fanout + c;
    }
    if (c > 0) mass -= ends[c - 1];
    return node * fanout + c;
  }
};

/// Minimum of the leaf values; unset leaves hold +infinity.
class min_tree : public detail::segment_tree<detail::min_combine> {
 public:
  /// A tree over `leaves` leaves, all +infinity.
  explicit min_tree(std::size_t leaves) : segment_tree(leaves) {}
};

}  // namespace coral::replay
