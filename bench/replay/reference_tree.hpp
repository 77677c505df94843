#pragma once
/// \file
/// `reference_tree`: the priority tree as it was before issue 15 (commit
/// 6951f21, replay/include/coral/replay/priority_tree.hpp), kept verbatim
/// but renamed so that replay_bench can time the old sample and update path
/// against the new one in the same run. Not used by the library.
///
/// Its own description, as it stood:
/// `priority_tree`: the sum and the minimum of the priorities of a fixed set
/// of items, and the item where a prefix sum falls; the index behind
/// proportional prioritized replay (Schaul et al. 2016).
///
/// Layout, chosen for a million items and random access, where the cost is
/// cache misses, not arithmetic:
/// - leaves are floats, 16 to a 64-byte cache line (a group); 0 means the item
///   is absent (it counts 0 in the sum and is left out of the minimum), so one
///   leaf array serves both reductions;
/// - above the leaves an 8-ary tree over the groups holds, per node, the sum
///   of its leaves in double (8 siblings are one cache line) and, in a
///   separate array, the minimum of its present leaves in float (exact: it is
///   one of the leaves).
/// At a million items the leaves are 4 MB instead of two 8 MB double arrays,
/// the lowest sum level half a megabyte, and an update recomputes the sum and
/// the minimum of a group from the one leaf line it has just written, so the
/// minimum costs no extra miss at the bottom. Parents are always recomputed
/// from their children, never adjusted by a delta, so rounding errors do not
/// accumulate over millions of updates, and the tree is a function of its
/// leaves: rebuilding it from the same leaves gives the same sums bit for bit.
///
/// Thread safety: none; the replay buffer owns its tree.

#include <algorithm>
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include "coral/core/huge_page_allocator.hpp"

namespace coral::replay::bench {

/// Float priorities of `size()` items with their sum, their minimum, and
/// prefix-sum search.
class reference_tree {
 public:
  /// Leaves per group: one cache line of floats.
  static constexpr std::size_t leaf_fanout = 16;
  /// Children per node above the groups: one cache line of doubles.
  static constexpr std::size_t fanout = 8;
  /// How many items ahead the batch operations prefetch.
  static constexpr std::size_t prefetch_distance = 16;

  /// A tree over `leaves` items, all absent (leaf 0).
  explicit reference_tree(std::size_t leaves) : leaves_count_(leaves) {
    const std::size_t groups = std::max<std::size_t>((leaves + leaf_fanout - 1) / leaf_fanout, 1);
    leaves_.assign(groups * leaf_fanout, 0.0f);
    // Level widths from the groups up to the root; each level is padded to
    // whole rows of 8, so the children of a node are one aligned row.
    std::vector<std::size_t> widths{groups};
    while (widths.back() > 1) widths.push_back((widths.back() + fanout - 1) / fanout);
    std::reverse(widths.begin(), widths.end());
    widths_ = widths;
    std::size_t rows = 0;
    for (const std::size_t w : widths) {
      offsets_.push_back(rows * fanout);
      rows += (w + fanout - 1) / fanout;
    }
    sums_.assign(rows * fanout, 0.0);
    mins_.assign(rows * fanout, absent_min);
  }

  /// Number of leaves.
  [[nodiscard]] std::size_t size() const noexcept { return leaves_count_; }

  /// Sum of every leaf.
  [[nodiscard]] double total() const noexcept { return sums_.data()[0]; }

  /// Smallest present (non-zero) leaf; +infinity when there is none.
  [[nodiscard]] float min() const noexcept { return mins_.data()[0]; }

  /// Leaf i (i < size(), unchecked).
  [[nodiscard]] float get(std::size_t i) const noexcept { return leaves_.data()[i]; }

  /// Sets leaf i to `value` (>= 0; 0 makes it absent) and recomputes its
  /// ancestors (i < size(), unchecked).
  void set(std::size_t i, float value) noexcept {
    leaves_.data()[i] = value;
    std::size_t node = i / leaf_fanout;
    refresh_group(node);
    for (std::size_t d = depth(); d > 0; --d) {
      node /= fanout;
      refresh_node(d - 1, node);
    }
  }

  /// Sets leaf idx[i] to values[i] for every i and recomputes their
  /// ancestors, level by level across the whole batch so that the cache
  /// misses of distinct leaves overlap (with prefetches a few items ahead)
  /// instead of following one another. A node shared by consecutive indices
  /// is recomputed once per level (the indices of a stratified sample are
  /// sorted, so near the root most are shared), and a minimum climbs only
  /// while it changes. Indices may repeat; the last value written wins.
  /// Unchecked. Allocates only when the batch is larger than any before.
  void set_many(std::span<const std::size_t> idx, std::span<const float> values) {
    const std::size_t n = idx.size();
    float* leaves = leaves_.data();
    for (std::size_t i = 0; i < n; ++i) {
      if (i + prefetch_distance < n) __builtin_prefetch(leaves + idx[i + prefetch_distance], 1);
      leaves[idx[i]] = values[i];
    }
    // The groups: each reads the leaf line written just above, still cached.
    // changed_ collects the groups whose minimum moved.
    changed_.resize(n);
    std::size_t changed = 0;
    double* group_sums = sums(depth());
    float* group_mins = mins(depth());
    for (std::size_t i = 0; i < n; ++i) {
      if (i + prefetch_distance < n) {
        const std::size_t ahead = idx[i + prefetch_distance] / leaf_fanout;
        __builtin_prefetch(group_sums + ahead, 1);
        __builtin_prefetch(group_mins + ahead, 1);
      }
      const std::size_t g = idx[i] / leaf_fanout;
      const float old_min = group_mins[g];
      refresh_group(g);
      changed_[changed] = g;  // branch-free: whether it moved is a coin flip to the predictor
      changed += group_mins[g] != old_min ? 1 : 0;
    }
    changed_.resize(changed);
    std::size_t shift = fanout_bits;  // from a group index to its ancestor at level d - 1
    for (std::size_t d = depth(); d > 0; --d, shift += fanout_bits) {
      double* parent_sums = sums(d - 1);
      if (widths_[d - 1] * 2 <= n) {
        // Near the root the batch outnumbers the nodes: recompute them all.
        for (std::size_t p = 0; p < widths_[d - 1]; ++p) parent_sums[p] = sum8(sums(d) + p * fanout);
      } else {
        std::size_t last = static_cast<std::size_t>(-1);
        for (std::size_t i = 0; i < n; ++i) {
          if (i + prefetch_distance < n) {
            __builtin_prefetch(parent_sums + ((idx[i + prefetch_distance] / leaf_fanout) >> shift), 1);
          }
          // Recomputed from children that are final at this level: once is
          // enough, and a sorted batch shares many ancestors.
          const std::size_t p = (idx[i] / leaf_fanout) >> shift;
          if (p == last) continue;
          parent_sums[p] = sum8(sums(d) + p * fanout);
          last = p;
        }
      }
      // Minima: changed_ holds nodes of level d whose minimum moved; keep
      // their parents whose minimum moves in turn.
      float* parent_mins = mins(d - 1);
      std::size_t kept = 0;
      std::size_t last = static_cast<std::size_t>(-1);
      for (const std::size_t child : changed_) {
        const std::size_t p = child / fanout;
        if (p == last) continue;
        last = p;
        const float old_min = parent_mins[p];
        parent_mins[p] = min8(mins(d) + p * fanout);
        if (parent_mins[p] != old_min) changed_[kept++] = p;
      }
      changed_.resize(kept);
    }
  }

  /// Starts fetching the lines that setting leaf i reads first (its leaf
  /// line, its group's sum and minimum), for a caller that knows the indices
  /// of a set_many well before it calls it (i < size(), unchecked).
  void prefetch(std::size_t i) const noexcept {
    const std::size_t g = i / leaf_fanout;
    __builtin_prefetch(leaves_.data() + i);
    __builtin_prefetch(sums(depth()) + g);
    __builtin_prefetch(mins_.data() + offsets_[depth()] + g);
  }

  /// The leaves, for bulk writes followed by refresh().
  [[nodiscard]] float* leaf_data() noexcept { return leaves_.data(); }

  /// Recomputes the ancestors of leaves [first, last) after their values were
  /// written through leaf_data(): O(count + depth) for a contiguous run.
  void refresh(std::size_t first, std::size_t last) noexcept {
    if (first >= last) return;
    std::size_t lo = first / leaf_fanout, hi = (last - 1) / leaf_fanout;
    for (std::size_t g = lo; g <= hi; ++g) refresh_group(g);
    for (std::size_t d = depth(); d > 0; --d) {
      lo /= fanout;
      hi /= fanout;
      for (std::size_t p = lo; p <= hi; ++p) refresh_node(d - 1, p);
    }
  }

  /// The smallest leaf i with (sum of leaves before i) <= mass < (that sum +
  /// leaf i), for 0 <= mass < total(). Never returns an absent leaf while
  /// total() > 0: where rounding puts `mass` at or past the end of a subtree,
  /// the descent stays in a sibling that has mass.
  [[nodiscard]] std::size_t find_prefix(double mass) const noexcept {
    std::size_t node = 0;
    for (std::size_t d = 1; d <= depth(); ++d) node = node_step(sums(d), node, mass);
    return leaf_step(leaves_.data(), node, mass);
  }

  /// find_prefix for every masses[i], into leaves[i], calling
  /// on_leaf(leaves[i]) as soon as each is found (to prefetch what the caller
  /// will read for it). The draws descend level by level, each prefetching
  /// the line it reads at the next level as soon as it knows it, so that a
  /// whole pass over the batch hides each miss; the top levels, where the
  /// draws outnumber the nodes, are one merge pass (fastest for sorted
  /// masses, as a stratified sample's are). `masses` is used as scratch and
  /// left unspecified. Same sizes, unchecked.
  template <class OnLeaf>
  void find_prefix_many(std::span<double> masses, std::span<std::size_t> leaves, OnLeaf&& on_leaf) const noexcept {
    const std::size_t n = masses.size();
    std::size_t start = 0;
    while (start < depth() && widths_[start + 1] * 2 <= n) ++start;
    if (start > 0) {
      merge_level(start, masses, leaves);
    } else {
      for (std::size_t i = 0; i < n; ++i) leaves[i] = 0;
    }
    for (std::size_t d = start + 1; d <= depth(); ++d) {
      const double* children = sums(d);
      // Where the chosen node's children are: the next level, or the leaves.
      const auto next_line = [&](std::size_t node) -> const void* {
        return d < depth() ? static_cast<const void*>(sums(d + 1) + node * fanout)
                           : static_cast<const void*>(leaves_.data() + node * leaf_fanout);
      };
      // The running ends of the last node's children: near the root
      // consecutive sorted draws descend through the same node and reuse them.
      double ends[fanout];
      std::size_t last = static_cast<std::size_t>(-1);
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t node = leaves[i];
        if (node != last) {
          running_ends(children + node * fanout, ends);
          last = node;
        }
        leaves[i] = choose_child(children, node, ends, masses[i]);
        __builtin_prefetch(next_line(leaves[i]));
      }
    }
    const float* leaf_values = leaves_.data();
    for (std::size_t i = 0; i < n; ++i) {
      leaves[i] = leaf_step(leaf_values, leaves[i], masses[i]);
      on_leaf(leaves[i]);
    }
  }

  /// find_prefix_many with nothing to do per leaf.
  void find_prefix_many(std::span<double> masses, std::span<std::size_t> leaves) const noexcept {
    find_prefix_many(masses, leaves, [](std::size_t) {});
  }

 private:
  static constexpr float absent_min = std::numeric_limits<float>::infinity();
  static constexpr std::size_t fanout_bits = 3;  // log2(fanout)

  // Levels of sums and mins: 0 is the root, depth() the groups.
  [[nodiscard]] std::size_t depth() const noexcept { return offsets_.size() - 1; }
  [[nodiscard]] double* sums(std::size_t d) noexcept { return sums_.data() + offsets_[d]; }
  [[nodiscard]] const double* sums(std::size_t d) const noexcept { return sums_.data() + offsets_[d]; }
  [[nodiscard]] float* mins(std::size_t d) noexcept { return mins_.data() + offsets_[d]; }

  void refresh_group(std::size_t g) noexcept {
    const float* c = leaves_.data() + g * leaf_fanout;
    // Pairwise: shorter dependency chains than a running sum.
    double s[leaf_fanout / 2];
    float m[leaf_fanout];
    for (std::size_t k = 0; k < leaf_fanout; ++k) m[k] = c[k] > 0.0f ? c[k] : absent_min;
    for (std::size_t k = 0; k < leaf_fanout / 2; ++k) {
      s[k] = static_cast<double>(c[2 * k]) + static_cast<double>(c[2 * k + 1]);
    }
    for (std::size_t k = 0; k < leaf_fanout / 2; ++k) m[k] = std::min(m[k], m[k + leaf_fanout / 2]);
    sums(depth())[g] = sum8(s);
    mins(depth())[g] = min8(m);
  }

  void refresh_node(std::size_t d, std::size_t p) noexcept {
    sums(d)[p] = sum8(sums(d + 1) + p * fanout);
    mins(d)[p] = min8(mins(d + 1) + p * fanout);
  }

  static double sum8(const double* c) noexcept {
    return ((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]));
  }
  static float min8(const float* c) noexcept {
    return std::min(std::min(std::min(c[0], c[1]), std::min(c[2], c[3])),
                    std::min(std::min(c[4], c[5]), std::min(c[6], c[7])));
  }

  // Level d by a merge instead of d descent steps: the node of level d
  // where each mass falls, by the running sum over the whole level, and the
  // remainder within it; the same count rule (zero nodes skipped, rounding
  // past the end lands in the last node with mass). Linear in the level's
  // width plus n for sorted masses, as a stratified sample's are; an
  // unsorted mass restarts the walk.
  void merge_level(std::size_t d, std::span<double> masses, std::span<std::size_t> nodes) const noexcept {
    const double* level = sums(d);
    const std::size_t width = widths_[d];
    std::size_t j = 0;
    double before = 0.0;  // sum of the nodes before j
    double previous = 0.0;
    for (std::size_t i = 0; i < masses.size(); ++i) {
      const double mass = masses[i];
      if (mass < previous) {
        j = 0;
        before = 0.0;
      }
      previous = mass;
      while (j + 1 < width && before + level[j] <= mass) before += level[j++];
      if (before + level[j] <= mass) [[unlikely]] {
        std::size_t last = j;
        while (last > 0 && !(level[last] > 0.0)) --last;
        nodes[i] = last;
        masses[i] = level[last] * 0.5;
        continue;
      }
      nodes[i] = j;
      masses[i] = mass - before;
      __builtin_prefetch(d < depth() ? static_cast<const void*>(sums(d + 1) + j * fanout)
                                     : static_cast<const void*>(leaves_.data() + j * leaf_fanout));
    }
  }

  // ends[k] = children[0] + ... + children[k], added left to right.
  static void running_ends(const double* children, double* ends) noexcept {
    double acc = 0.0;
    for (std::size_t k = 0; k < fanout; ++k) {
      acc += children[k];
      ends[k] = acc;
    }
  }

  // One level of the descent: the child of `node` where `mass` falls, given
  // the running ends of its children; `mass` becomes the remainder within
  // that child.
  static std::size_t choose_child(const double* level, std::size_t node, const double* ends, double& mass) noexcept {
    // Branch-free: c counts the children whose running end is <= mass, so c
    // is the child where mass falls, zero-mass children skipped (their end
    // ties with the one before). A random descent mispredicts a branchy scan
    // at almost every level.
    std::size_t c = 0;
    for (std::size_t k = 0; k < fanout; ++k) c += ends[k] <= mass ? 1 : 0;
    if (c == fanout) [[unlikely]] {
      // Past the end by rounding: land inside the last child with mass.
      const double* children = level + node * fanout;
      c = fanout - 1;
      while (c > 0 && !(children[c] > 0.0)) --c;
      mass = children[c] * 0.5;
      return node * fanout + c;
    }
    if (c > 0) mass -= ends[c - 1];
    return node * fanout + c;
  }

  static std::size_t node_step(const double* level, std::size_t node, double& mass) noexcept {
    double ends[fanout];
    running_ends(level + node * fanout, ends);
    return choose_child(level, node, ends, mass);
  }

  // The last step: the leaf of `group` where `mass` falls; no remainder.
  // The same count rule as choose_child, over 16 leaves.
  static std::size_t leaf_step(const float* leaves, std::size_t group, double mass) noexcept {
    const float* children = leaves + group * leaf_fanout;
    double acc = 0.0;
    std::size_t c = 0;
    for (std::size_t k = 0; k < leaf_fanout; ++k) {
      acc += static_cast<double>(children[k]);
      c += acc <= mass ? 1 : 0;
    }
    if (c == leaf_fanout) [[unlikely]] {
      c = leaf_fanout - 1;
      while (c > 0 && !(children[c] > 0.0f)) --c;
    }
    return group * leaf_fanout + c;
  }

  std::size_t leaves_count_;
  // Cache-line aligned (huge-page aligned when large), so each group of
  // leaves and each row of 8 children is one aligned line.
  coral::huge_vector<float> leaves_;
  coral::huge_vector<double> sums_;  // levels of 8-ary sums, root first, each a whole number of rows
  coral::huge_vector<float> mins_;   // the same levels, minima of the present leaves
  std::vector<std::size_t> offsets_;  // first element of each level in sums_ and mins_
  std::vector<std::size_t> widths_;   // nodes in each level, root first
  std::vector<std::size_t> changed_;  // set_many's scratch: nodes whose minimum moved
};

}  // namespace coral::replay::bench
