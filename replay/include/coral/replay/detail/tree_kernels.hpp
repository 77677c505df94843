#pragma once
/// \file
/// The arithmetic of one priority_tree line: the sum and the minimum of a
/// group of 16 float leaves, the sum and the minimum of a row of 8 children,
/// and the child of a row (or the leaf of a group) where a mass falls.
///
/// The sums and minima are written twice: with SSE2 (every x86-64 CPU has
/// it, so no compiler flag is needed) and in plain C++ for other targets.
/// Both add in the same order, spelled out on each kernel, so they give the
/// same bits, and the tree stays a function of its leaves whichever one a
/// build uses; tests/replay/priority_tree_test.cpp compares them on random
/// lines. `scalar` always holds the plain versions (the tests call both).
///
/// The picks (row_pick, group_pick) count a line's running ends at or below
/// a mass, and never stop in a zero child (the rule is spelled out above
/// past_end). The batch passes (descend, pick_leaves, refresh_groups) have
/// AVX2 and AVX-512 twins in src/tree_kernels.cpp, and search_level an
/// AVX-512 one, chosen at run time where the CPU has them (isa.hpp), that
/// give the same bits.

#include <cstddef>
#include <cstdint>
#include <limits>

#include "coral/replay/detail/isa.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace coral::replay::detail {

/// An absent subtree's minimum.
inline constexpr float absent_min = std::numeric_limits<float>::infinity();

namespace scalar {

/// Sum of 16 leaves: even leaves and odd leaves are summed apart, each as
/// ((l0 + l2) + (l4 + l6)) + ((l8 + l10) + (l12 + l14)), then even + odd.
inline double group_sum(const float* l) noexcept {
  double lane[2];
  for (int j = 0; j < 2; ++j) {
    const auto x = [&](int k) { return static_cast<double>(l[2 * k + j]); };
    lane[j] = ((x(0) + x(1)) + (x(2) + x(3))) + ((x(4) + x(5)) + (x(6) + x(7)));
  }
  return lane[0] + lane[1];
}

/// Smallest leaf > 0 of 16; absent_min if none is.
inline float group_min(const float* l) noexcept {
  float m = absent_min;
  for (int k = 0; k < 16; ++k) {
    if (l[k] > 0.0f && l[k] < m) m = l[k];
  }
  return m;
}

/// Sum of a row of 8: ((c0 + c2) + (c4 + c6)) + ((c1 + c3) + (c5 + c7)).
inline double row_sum(const double* c) noexcept {
  return ((c[0] + c[2]) + (c[4] + c[6])) + ((c[1] + c[3]) + (c[5] + c[7]));
}

/// Smallest of a row of 8 minima.
inline float row_min(const float* c) noexcept {
  float m = c[0];
  for (int k = 1; k < 8; ++k) m = c[k] < m ? c[k] : m;
  return m;
}

}  // namespace scalar

#if defined(__SSE2__)

namespace sse2 {

// The second lane in both lanes.
inline __m128d high_both(__m128d x) noexcept { return _mm_unpackhi_pd(x, x); }
// Leaves 2k, 2k + 1 and 2k + 2, 2k + 3 of a float quadruple, as doubles.
inline __m128d low_pair(__m128 q) noexcept { return _mm_cvtps_pd(q); }
inline __m128d high_pair(__m128 q) noexcept { return _mm_cvtps_pd(_mm_movehl_ps(q, q)); }

inline double group_sum(const float* l) noexcept {
  const __m128 q0 = _mm_load_ps(l), q1 = _mm_load_ps(l + 4), q2 = _mm_load_ps(l + 8), q3 = _mm_load_ps(l + 12);
  const __m128d s = _mm_add_pd(_mm_add_pd(_mm_add_pd(low_pair(q0), high_pair(q0)), _mm_add_pd(low_pair(q1), high_pair(q1))),
                               _mm_add_pd(_mm_add_pd(low_pair(q2), high_pair(q2)), _mm_add_pd(low_pair(q3), high_pair(q3))));
  return _mm_cvtsd_f64(_mm_add_sd(s, high_both(s)));
}

inline float group_min(const float* l) noexcept {
  const __m128 zero = _mm_setzero_ps(), inf = _mm_set1_ps(absent_min);
  const auto present = [&](__m128 q) {
    const __m128 mask = _mm_cmpgt_ps(q, zero);
    return _mm_or_ps(_mm_and_ps(mask, q), _mm_andnot_ps(mask, inf));
  };
  __m128 m = _mm_min_ps(_mm_min_ps(present(_mm_load_ps(l)), present(_mm_load_ps(l + 4))),
                        _mm_min_ps(present(_mm_load_ps(l + 8)), present(_mm_load_ps(l + 12))));
  m = _mm_min_ps(m, _mm_movehl_ps(m, m));
  m = _mm_min_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

inline double row_sum(const double* c) noexcept {
  const __m128d s = _mm_add_pd(_mm_add_pd(_mm_load_pd(c), _mm_load_pd(c + 2)),
                               _mm_add_pd(_mm_load_pd(c + 4), _mm_load_pd(c + 6)));
  return _mm_cvtsd_f64(_mm_add_sd(s, high_both(s)));
}

inline float row_min(const float* c) noexcept {
  __m128 m = _mm_min_ps(_mm_load_ps(c), _mm_load_ps(c + 4));
  m = _mm_min_ps(m, _mm_movehl_ps(m, m));
  m = _mm_min_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

}  // namespace sse2

using sse2::group_min;
using sse2::group_sum;
using sse2::row_min;
using sse2::row_sum;

#else

using scalar::group_min;
using scalar::group_sum;
using scalar::row_min;
using scalar::row_sum;

#endif

// The descent's picks. The rule (the same bits on every build and ISA):
//
// - A line's running ends are formed by blocks of four children x0..x3 as
//   x0, x0 + x1, (x0 + x1) + x2, (x0 + x1) + (x2 + x3), each plus the last
//   end of the block before (0 for the first): an order a vector adds in,
//   so SSE2, AVX2, AVX-512 and plain C++ agree bit for bit. Every end is a carry plus
//   an end within its block, so the ends never decrease (adding a
//   non-negative number never lowers a sum) and a child of 0 leaves its end
//   equal to the one before, exactly.
// - The child is k, the number of ends at or below the mass. For k inside
//   the line, end k is above the mass and so above end k - 1: child k is
//   not zero. In a row the remainder is the mass less end k - 1 (0 for
//   k = 0): never negative. Rounding can put it past the child by an ulp of
//   end k; the child's own line then finds it at or past its end, below.
// - k = n, a mass at or past the line's end (by rounding, since a parent's
//   sum adds in another order, or a remainder past its child):
//   past_end.
// So a pick is compares and a count, with no branch on where a draw goes,
// and a child returned is never zero.

/// Where a pick found no child (a mass at or past the line's end): the last
/// child with mass (the first when none has), the remainder half of it.
template <class T>
[[gnu::noinline, gnu::cold]] inline unsigned past_end(const T* c, unsigned n, double& mass) noexcept {
  unsigned k = n - 1;
  while (k > 0 && !(c[k] > 0)) --k;
  mass = static_cast<double>(c[k]) * 0.5;
  return k;
}

/// The rule's last step, shared by every instruction set: `bits` has bit i
/// set where end i is at or below `mass` (the first k bits, the ends never
/// decreasing); `ends[i + 1]` is end i and `ends[0]` is 0 (read for a row
/// only; a group may pass nullptr). Row: `mass` becomes the remainder
/// within the child. n, `mass` untouched, at or past the line's end.
template <bool Row>
[[gnu::always_inline]] inline unsigned accept_count(unsigned bits, unsigned n, const double* ends,
                                                    double& mass) noexcept {
  const auto k = static_cast<unsigned>(__builtin_ctz(~bits));
  if constexpr (Row) {
    if (k < n) [[likely]] mass -= ends[k];
  }
  return k;
}

namespace scalar {

/// The running ends of n children (n a multiple of 4), as the rule above.
template <class T>
inline void running_ends(const T* c, unsigned n, double* ends) noexcept {
  double carry = 0.0;
  for (unsigned b = 0; b < n; b += 4) {
    const auto x = [&](unsigned i) { return static_cast<double>(c[b + i]); };
    const double s01 = x(0) + x(1);
    ends[b] = x(0) + carry;
    ends[b + 1] = s01 + carry;
    ends[b + 2] = (s01 + x(2)) + carry;
    ends[b + 3] = (s01 + (x(2) + x(3))) + carry;
    carry = ends[b + 3];
  }
}

// A row's pick (Row: the mass becomes the remainder) or a group's.
template <class T, unsigned N, bool Row>
inline unsigned pick(const T* c, double& mass) noexcept {
  double ends[N + 1];
  running_ends(c, N, ends + 1);
  ends[0] = 0.0;
  unsigned bits = 0;
  for (unsigned i = 0; i < N; ++i) bits |= (ends[i + 1] <= mass ? 1u : 0u) << i;
  return accept_count<Row>(bits, N, ends, mass);
}

/// The child of a row of 8 where `mass` falls, by the rule above; `mass`
/// becomes the remainder within it. 8, `mass` untouched, when it is at or
/// past the row's end.
inline unsigned row_pick(const double* c, double& mass) noexcept { return pick<double, 8, true>(c, mass); }

/// The leaf of a group of 16 where `mass` falls; 16 at or past its end.
inline unsigned group_pick(const float* l, double mass) noexcept { return pick<float, 16, false>(l, mass); }

}  // namespace scalar

#if defined(__SSE2__)

namespace sse2 {

// The running ends of a block of four, [x0, x1] and [x2, x3], plus `carry`
// (in both lanes); the rule's order.
inline void ends4(__m128d& lo, __m128d& hi, __m128d carry) noexcept {
  const __m128d zero = _mm_setzero_pd();
  const __m128d s01 = _mm_add_pd(lo, _mm_unpacklo_pd(zero, lo));  // x0 + 0, x1 + x0
  const __m128d s23 = _mm_add_pd(hi, _mm_unpacklo_pd(zero, hi));  // x2 + 0, x3 + x2
  lo = _mm_add_pd(s01, carry);
  hi = _mm_add_pd(_mm_add_pd(s23, _mm_unpackhi_pd(s01, s01)), carry);
}

// Bits i, i + 1 set where the ends of a pair are at or below the mass.
inline unsigned at_or_below(__m128d ends, __m128d mass, unsigned i) noexcept {
  return static_cast<unsigned>(_mm_movemask_pd(_mm_cmple_pd(ends, mass))) << i;
}

inline unsigned row_pick(const double* c, double& mass) noexcept {
  const __m128d m = _mm_set1_pd(mass);
  __m128d e0 = _mm_load_pd(c), e1 = _mm_load_pd(c + 2), e2 = _mm_load_pd(c + 4), e3 = _mm_load_pd(c + 6);
  ends4(e0, e1, _mm_setzero_pd());
  ends4(e2, e3, _mm_unpackhi_pd(e1, e1));
  alignas(16) double ends[10];  // ends[1] = 0, then end i at ends[i + 2]
  ends[1] = 0.0;
  _mm_store_pd(ends + 2, e0);
  _mm_store_pd(ends + 4, e1);
  _mm_store_pd(ends + 6, e2);
  _mm_store_pd(ends + 8, e3);
  const unsigned bits = at_or_below(e0, m, 0) | at_or_below(e1, m, 2) | at_or_below(e2, m, 4) | at_or_below(e3, m, 6);
  return accept_count<true>(bits, 8, ends + 1, mass);
}

inline unsigned group_pick(const float* l, double mass) noexcept {
  const __m128d m = _mm_set1_pd(mass);
  __m128d carry = _mm_setzero_pd();
  unsigned bits = 0;
  for (unsigned b = 0; b < 16; b += 4) {
    const __m128 q = _mm_load_ps(l + b);
    __m128d lo = _mm_cvtps_pd(q), hi = _mm_cvtps_pd(_mm_movehl_ps(q, q));
    ends4(lo, hi, carry);
    carry = _mm_unpackhi_pd(hi, hi);
    bits |= at_or_below(lo, m, b) | at_or_below(hi, m, b + 2);
  }
  return accept_count<false>(bits, 16, nullptr, mass);
}

}  // namespace sse2

using sse2::group_pick;
using sse2::row_pick;

#else

using scalar::group_pick;
using scalar::row_pick;

#endif

/// One level of a batch descent: for each i < n, the child of row
/// nodes[i] of `level` where masses[i] falls, by row_pick, into nodes[i]
/// (as an index in the next level: node * 8 + child), and masses[i] becomes
/// the remainder within it. A mass at or past its row's end (by rounding)
/// lands in the last child with mass, at half of it. Each draw then
/// prefetches line nodes[i] of `next` (lines of 64 bytes: the next level's
/// row, or the group of leaves). Every isa gives the same bits.
void descend(isa which, const double* level, std::size_t* nodes, double* masses, std::size_t n,
             const void* next) noexcept;

/// The top of a batch descent in one pass over a level of `width` nodes:
/// for each i < n, the node where masses[i] falls by the running sums over
/// the whole level, formed left to right (end j = end j-1 + level[j]),
/// into nodes[i], and masses[i] becomes the remainder (the mass less the
/// end of the node before). Zero nodes are never chosen; at or past the
/// level's end (by rounding), the last node with mass, at half of it.
/// Prefetches line nodes[i] of `next`. false, with nothing written, where
/// this isa or width has no kernel (the caller then merges: see
/// priority_tree::merge_level, which gives the same bits).
bool search_level(isa which, const double* level, std::size_t width, std::size_t* nodes, double* masses,
                  std::size_t n, const void* next) noexcept;

/// How many items ahead the batch passes prefetch.
inline constexpr std::size_t prefetch_distance = 16;

/// The leaves and the groups of a batch update: for each i < n,
/// leaves[idx[i]] = values[i] (in order: the last value for a leaf wins),
/// and the sum and the minimum of group idx[i] / 16 recomputed from its
/// final leaves (group_sum, group_min) into group_sums and group_mins. Each
/// group whose minimum moved is appended to `changed` (room for n), once
/// per recompute that moved it. Returns how many were. The leaves are
/// written prefetch_distance draws ahead of the groups that read them, and
/// the lines prefetched as far ahead. Every isa gives the same bits.
std::size_t refresh_groups(isa which, float* leaves, const float* values, double* group_sums, float* group_mins,
                           const std::size_t* idx, std::size_t n, std::size_t* changed) noexcept;

/// The last step: nodes[i] becomes the leaf of group nodes[i] where
/// masses[i] falls, by group_pick (the last leaf with mass when it is at or
/// past the group's end). Every isa gives the same leaves.
void pick_leaves(isa which, const float* leaves, std::size_t* nodes, const double* masses, std::size_t n) noexcept;

}  // namespace coral::replay::detail
