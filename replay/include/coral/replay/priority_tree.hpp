#pragma once
/// \file
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
#include "coral/replay/detail/tree_kernels.hpp"

namespace coral::replay {

/// Float priorities of `size()` items with their sum, their minimum, and
/// prefix-sum search.
class priority_tree {
 public:
  /// Leaves per group: one cache line of floats.
  static constexpr std::size_t leaf_fanout = 16;
  /// Children per node above the groups: one cache line of doubles.
  static constexpr std::size_t fanout = 8;
  /// How many items ahead the batch operations prefetch.
  static constexpr std::size_t prefetch_distance = detail::prefetch_distance;

  /// A tree over `leaves` items, all absent (leaf 0).
  explicit priority_tree(std::size_t leaves) : leaves_count_(leaves) {
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
  /// instead of following one another (two sparse levels share one pass:
  /// see refresh_sums). Near the root, where the batch outnumbers a level's
  /// nodes, the whole level is recomputed; a minimum climbs only while it
  /// changes. Indices may repeat, in any order; the last value written wins.
  /// Unchecked. Allocates only when the batch is larger than any before.
  void set_many(std::span<const std::size_t> idx, std::span<const float> values) {
    const std::size_t n = idx.size();
    // The leaves and their groups; changed_ collects the groups whose
    // minimum moved.
    changed_.resize(n);
    changed_.resize(detail::refresh_groups(detail::best_isa(), leaves_.data(), values.data(), sums(depth()),
                                           mins(depth()), idx.data(), n, changed_.data()));
    refresh_sums(idx);
    // Minima: changed_ holds nodes of level d whose minimum moved; keep
    // their parents whose minimum moves in turn.
    for (std::size_t d = depth(); d > 0 && !changed_.empty(); --d) {
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

  /// find_prefix for every masses[i], into leaves[i], then on_leaf(leaves[i])
  /// for each in order (to prefetch what the caller will read for it). The
  /// draws descend level by level, each prefetching the line it reads at the
  /// next level as soon as it knows it, so that a whole pass over the batch
  /// hides each miss; the top levels, where the draws outnumber the nodes,
  /// are one pass over the lowest of them by its running sums: a search per
  /// draw (detail::search_level, where the CPU has AVX-512 and the level
  /// at most 128 nodes), otherwise a merge (fastest for sorted masses, as a
  /// stratified sample's are); both give the same bits. The levels below
  /// run detail::descend in the widest instruction set the CPU has (the
  /// same leaves in each). `masses` is used as scratch and left
  /// unspecified. Same sizes, unchecked.
  template <class OnLeaf>
  void find_prefix_many(std::span<double> masses, std::span<std::size_t> leaves, OnLeaf&& on_leaf) const noexcept {
    const std::size_t n = masses.size();
    std::size_t start = 0;
    while (start < depth() && widths_[start + 1] * 2 <= n) ++start;
    const detail::isa isa = detail::best_isa();
    if (start > 0) {
      if (!detail::search_level(isa, sums(start), widths_[start], leaves.data(), masses.data(), n, next_line(start))) {
        merge_level(start, masses, leaves);
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) leaves[i] = 0;
    }
    for (std::size_t d = start + 1; d <= depth(); ++d) {
      // Each draw prefetches the line it reads next: the next level's row,
      // or its group of leaves.
      detail::descend(isa, sums(d), leaves.data(), masses.data(), n, next_line(d));
    }
    detail::pick_leaves(isa, leaves_.data(), leaves.data(), masses.data(), n);
    for (std::size_t i = 0; i < n; ++i) on_leaf(leaves[i]);
  }

  /// find_prefix_many with nothing to do per leaf.
  void find_prefix_many(std::span<double> masses, std::span<std::size_t> leaves) const noexcept {
    find_prefix_many(masses, leaves, [](std::size_t) {});
  }

 private:
  static constexpr float absent_min = detail::absent_min;
  static constexpr std::size_t fanout_bits = 3;  // log2(fanout)
  // A row of 8 sums and a group of 16 leaves are each one cache line.
  static constexpr std::size_t line_bytes = fanout * sizeof(double);
  static_assert(line_bytes == leaf_fanout * sizeof(float));

  // Levels of sums and mins: 0 is the root, depth() the groups.
  [[nodiscard]] std::size_t depth() const noexcept { return offsets_.size() - 1; }
  [[nodiscard]] double* sums(std::size_t d) noexcept { return sums_.data() + offsets_[d]; }
  [[nodiscard]] const double* sums(std::size_t d) const noexcept { return sums_.data() + offsets_[d]; }
  [[nodiscard]] float* mins(std::size_t d) noexcept { return mins_.data() + offsets_[d]; }
  // What a draw at node i of level d reads next: line i of the level below
  // (its row of children), or of the leaves (its group).
  [[nodiscard]] const void* next_line(std::size_t d) const noexcept {
    return d < depth() ? static_cast<const void*>(sums(d + 1)) : static_cast<const void*>(leaves_.data());
  }

  void refresh_group(std::size_t g) noexcept {
    const float* c = leaves_.data() + g * leaf_fanout;
    sums(depth())[g] = detail::group_sum(c);
    mins(depth())[g] = detail::group_min(c);
  }

  void refresh_node(std::size_t d, std::size_t p) noexcept {
    sums(d)[p] = sum8(sums(d + 1) + p * fanout);
    mins(d)[p] = min8(mins(d + 1) + p * fanout);
  }

  // set_many's sums above the groups, whose sums are final: level by
  // level from the bottom, each node recomputed from its children once they
  // are final.
  void refresh_sums(std::span<const std::size_t> idx) noexcept {
    const std::size_t n = idx.size();
    const auto ancestor = [&](std::size_t i, std::size_t shift) { return (idx[i] / leaf_fanout) >> shift; };
    std::size_t d = depth();          // the level whose sums are final
    std::size_t shift = fanout_bits;  // from a group index to its ancestor at level d - 1
    while (d > 0) {
      double* parents = sums(d - 1);
      const double* children = sums(d);
      if (widths_[d - 1] * 2 <= n) {
        // Near the root the batch outnumbers the nodes: recompute them all.
        for (std::size_t p = 0; p < widths_[d - 1]; ++p) parents[p] = sum8(children + p * fanout);
        --d;
        shift += fanout_bits;
      } else if (d >= 2 && widths_[d - 2] * 2 > n) {
        // Two levels in one pass: draw i's parent, and the grandparent of
        // draw i - lag, whose parents were all recomputed at least lag
        // draws before (their stores long done). Whatever the order of the
        // batch, a grandparent's last recompute follows the last recompute
        // of each of its children. Every draw recomputes both, shared or
        // not (skipping shared ones saved nothing measurable).
        constexpr std::size_t lag = prefetch_distance;
        double* grandparents = sums(d - 2);
        for (std::size_t i = 0; i < n + lag; ++i) {
          if (i < n) {
            if (i + prefetch_distance < n) __builtin_prefetch(parents + ancestor(i + prefetch_distance, shift), 1);
            const std::size_t p = ancestor(i, shift);
            parents[p] = sum8(children + p * fanout);
          }
          if (i >= lag) {
            const std::size_t g = ancestor(i - lag, shift + fanout_bits);
            grandparents[g] = sum8(parents + g * fanout);
          }
        }
        d -= 2;
        shift += 2 * fanout_bits;
      } else {
        std::size_t last = static_cast<std::size_t>(-1);
        for (std::size_t i = 0; i < n; ++i) {
          if (i + prefetch_distance < n) __builtin_prefetch(parents + ancestor(i + prefetch_distance, shift), 1);
          // Once is enough, and a sorted batch shares many ancestors.
          const std::size_t p = ancestor(i, shift);
          if (p == last) continue;
          parents[p] = sum8(children + p * fanout);
          last = p;
        }
        --d;
        shift += fanout_bits;
      }
    }
  }

  static double sum8(const double* c) noexcept { return detail::row_sum(c); }
  static float min8(const float* c) noexcept { return detail::row_min(c); }

  // Level d by a merge instead of d descent steps: the node of level d
  // where each mass falls, by the running sum over the whole level, and the
  // remainder within it; the same rule as a descent step (zero nodes
  // skipped, rounding past the end lands in the last node with mass). One
  // pass over the level per run of masses that do not decrease: a
  // stratified sample's are one run.
  void merge_level(std::size_t d, std::span<double> masses, std::span<std::size_t> nodes) const noexcept {
    std::size_t i = 0;
    while (i < masses.size()) i = merge_run(d, masses, nodes, i);
  }

  // One pass of merge_level from draw `first`: each node in turn takes the
  // draws below its end, so the branch that ends a node's draws mispredicts
  // about once a node, not once a draw. Returns the first draw whose mass
  // is below the one before it (the next run), or the batch's size.
  std::size_t merge_run(std::size_t d, std::span<double> masses, std::span<std::size_t> nodes,
                        std::size_t first) const noexcept {
    const double* level = sums(d);
    const std::size_t width = widths_[d];
    const std::size_t n = masses.size();
    // Each draw prefetches the line it reads next: its row of the next
    // level, or its group of leaves.
    const char* next = static_cast<const char*>(next_line(d));
    const auto take = [&](std::size_t i, std::size_t node, double remainder) {
      nodes[i] = node;
      masses[i] = remainder;
      __builtin_prefetch(next + node * line_bytes);
    };
    std::size_t i = first;
    double before = 0.0;  // sum of the nodes before j
    double previous = masses[first];
    for (std::size_t j = 0; j + 1 < width && i < n; ++j) {
      const double end = before + level[j];
      for (; i < n && masses[i] < end; ++i) {
        if (masses[i] < previous) [[unlikely]] return i;
        previous = masses[i];
        take(i, j, masses[i] - before);
      }
      before = end;
    }
    // The last node takes the rest of the run; at or past its end (by
    // rounding), the last node with mass takes it, at half of it.
    const std::size_t last = width - 1;
    const double end = before + level[last];
    for (; i < n; ++i) {
      if (masses[i] < previous) [[unlikely]] return i;
      previous = masses[i];
      if (end <= masses[i]) [[unlikely]] {
        std::size_t k = last;
        while (k > 0 && !(level[k] > 0.0)) --k;
        take(i, k, level[k] * 0.5);
        continue;
      }
      take(i, last, masses[i] - before);
    }
    return n;
  }

  // One level of the descent: the child of `node` where `mass` falls;
  // `mass` becomes the remainder within that child. Never a child of zero
  // mass (see detail::row_pick); past the end by rounding, the last child
  // with mass (detail::past_end). detail::descend does this for a batch.
  static std::size_t node_step(const double* level, std::size_t node, double& mass) noexcept {
    const double* children = level + node * fanout;
    unsigned c = detail::row_pick(children, mass);
    if (c == fanout) [[unlikely]] c = detail::past_end(children, fanout, mass);
    return node * fanout + c;
  }

  // The last step: the leaf of `group` where `mass` falls; no remainder.
  // The same rule as node_step, over 16 leaves (detail::pick_leaves).
  static std::size_t leaf_step(const float* leaves, std::size_t group, double mass) noexcept {
    const float* children = leaves + group * leaf_fanout;
    unsigned c = detail::group_pick(children, mass);
    if (c == leaf_fanout) [[unlikely]] c = detail::past_end(children, leaf_fanout, mass);
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

}  // namespace coral::replay
