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
/// The picks (row_pick, group_pick) halve a line instead of forming its
/// running ends, and never stop in a zero child (see row_pick).

#include <cstddef>
#include <cstdint>
#include <limits>

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

// The descent's picks: plain C++ around one step, go_right, which is SSE2
// where there is SSE2 (a compiler turns `m >= part ? m - part : m` into a
// branch, and which way a draw goes is a coin flip to the predictor) and
// the same arithmetic in plain C++ elsewhere: m - part or m - 0, exactly.

/// Whether `m` is at or past `part` (>= 0, finite); if so, `m` loses it.
inline unsigned go_right(double& m, double part) noexcept {
#if defined(__SSE2__)
  const __m128d vm = _mm_set_sd(m), vp = _mm_set_sd(part);
  const __m128d past = _mm_cmple_sd(vp, vm);
  m = _mm_cvtsd_f64(_mm_sub_sd(vm, _mm_and_pd(past, vp)));
  return static_cast<unsigned>(_mm_movemask_pd(past)) & 1u;
#else
  const unsigned past = m >= part ? 1u : 0u;
  m -= part * static_cast<double>(past);
  return past;
#endif
}

/// The child of a row of 8 where `mass` falls, by halving: past the sum of
/// children 0-3 ((c0 + c1) + (c2 + c3)) it goes right and subtracts that
/// sum, then the same with the two children of the chosen half, then with
/// the chosen pair's first child. `mass` becomes the remainder within the
/// child. Returns 8, leaving `mass` as it was, when the remainder is not
/// below the child it reached: `mass` was at or past the row's end (by
/// rounding, since a parent's sum adds in another order).
///
/// Never a zero child otherwise: a remainder is never negative (it is only
/// reduced by a part it is not below), and the child is returned only when
/// the remainder is below it. Three steps of a sum and a select instead of
/// eight running ends.
inline unsigned row_pick(const double* c, double& mass) noexcept {
  double m = mass;
  const double half = (c[0] + c[1]) + (c[2] + c[3]);
  unsigned k = 4 * go_right(m, half);
  k += 2 * go_right(m, c[k] + c[k + 1]);
  k += go_right(m, c[k]);
  if (!(m < c[k])) [[unlikely]] return 8;
  mass = m;
  return k;
}

/// The leaf of a group of 16 where `mass` falls, by halving as row_pick
/// does, over the leaves as doubles: eight ((l0 + l1) + (l2 + l3)) + ((l4 +
/// l5) + (l6 + l7)), four, two, one. Returns 16 when `mass` is at or past
/// the group's end; never a zero leaf otherwise.
inline unsigned group_pick(const float* l, double mass) noexcept {
  const auto x = [l](unsigned i) { return static_cast<double>(l[i]); };
  double m = mass;
  const double eight = ((x(0) + x(1)) + (x(2) + x(3))) + ((x(4) + x(5)) + (x(6) + x(7)));
  unsigned k = 8 * go_right(m, eight);
  k += 4 * go_right(m, (x(k) + x(k + 1)) + (x(k + 2) + x(k + 3)));
  k += 2 * go_right(m, x(k) + x(k + 1));
  k += go_right(m, x(k));
  return m < x(k) ? k : 16u;
}

}  // namespace coral::replay::detail
