#pragma once
/// \file
/// The arithmetic of one priority_tree line: the sum and the minimum of a
/// group of 16 float leaves, the sum and the minimum of a row of 8 children,
/// and the child of a row (or the leaf of a group) where a mass falls.
///
/// Each kernel is written twice: with SSE2 (every x86-64 CPU has it, so no
/// compiler flag is needed) and in plain C++ for other targets. Both add in
/// the same order, spelled out on each kernel, so they give the same bits, and
/// the tree stays a function of its leaves whichever one a build uses;
/// tests/replay/priority_tree_test.cpp compares them on random lines.
/// `scalar` always holds the plain versions (the tests call both).
///
/// The orders are chosen so that a running end never moves past a zero
/// child: the end of a zero child is bit for bit the end before it, so a
/// descent never stops in an absent child (see running ends below).

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

/// Running ends of `n` (even) values: by pairs, carry + a and
/// carry + (a + b), the carry being the pair before's second end. A zero
/// child's end is the end before it: carry + (a + 0) = carry + a, and
/// carry + 0 = carry (the first carry is 0 and 0 + a = a exactly).
template <class T>
void running_ends(const T* c, int n, double* ends) noexcept {
  double carry = 0.0;
  for (int k = 0; k < n; k += 2) {
    const auto a = static_cast<double>(c[k]);
    const double b = a + static_cast<double>(c[k + 1]);
    ends[k] = carry + a;
    ends[k + 1] = carry + b;
    carry = ends[k + 1];
  }
}

/// How many of the running ends of 8 children are <= mass (the child where
/// mass falls; 8 when it is past the end), with the ends into `ends`.
inline unsigned row_count(const double* c, double mass, double* ends) noexcept {
  running_ends(c, 8, ends);
  unsigned n = 0;
  for (int k = 0; k < 8; ++k) n += ends[k] <= mass ? 1 : 0;
  return n;
}

/// How many of the running ends of 16 leaves are <= mass.
inline unsigned group_count(const float* l, double mass) noexcept {
  double ends[16];
  running_ends(l, 16, ends);
  unsigned n = 0;
  for (int k = 0; k < 16; ++k) n += ends[k] <= mass ? 1 : 0;
  return n;
}

}  // namespace scalar

#if defined(__SSE2__)

namespace sse2 {

// (a, a + b) from (a, b).
inline __m128d pair_ends(__m128d x) noexcept { return _mm_add_pd(x, _mm_unpacklo_pd(_mm_setzero_pd(), x)); }
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

// The running ends of 2n values given as n pairs (in place), and the bit
// mask of those <= mass (bit k for end k).
template <int n>
inline unsigned ends_mask(__m128d* e, double mass) noexcept {
  const __m128d m = _mm_set1_pd(mass);
  unsigned bits = 0;
  __m128d carry = _mm_setzero_pd();
  for (int k = 0; k < n; ++k) {
    e[k] = _mm_add_pd(carry, pair_ends(e[k]));
    carry = high_both(e[k]);
    bits |= static_cast<unsigned>(_mm_movemask_pd(_mm_cmple_pd(e[k], m))) << (2 * k);
  }
  return bits;
}

inline unsigned row_count(const double* c, double mass, double* ends) noexcept {
  __m128d e[4] = {_mm_load_pd(c), _mm_load_pd(c + 2), _mm_load_pd(c + 4), _mm_load_pd(c + 6)};
  const unsigned bits = ends_mask<4>(e, mass);
  for (int k = 0; k < 4; ++k) _mm_storeu_pd(ends + 2 * k, e[k]);
  // The ends rise, so the bits <= mass are the low ones: count them.
  return static_cast<unsigned>(__builtin_ctz(~bits));
}

inline unsigned group_count(const float* l, double mass) noexcept {
  const __m128 q0 = _mm_load_ps(l), q1 = _mm_load_ps(l + 4), q2 = _mm_load_ps(l + 8), q3 = _mm_load_ps(l + 12);
  __m128d e[8] = {low_pair(q0), high_pair(q0), low_pair(q1), high_pair(q1),
                  low_pair(q2), high_pair(q2), low_pair(q3), high_pair(q3)};
  return static_cast<unsigned>(__builtin_ctz(~ends_mask<8>(e, mass)));
}

}  // namespace sse2

using sse2::group_count;
using sse2::group_min;
using sse2::group_sum;
using sse2::row_count;
using sse2::row_min;
using sse2::row_sum;

#else

using scalar::group_count;
using scalar::group_min;
using scalar::group_sum;
using scalar::row_count;
using scalar::row_min;
using scalar::row_sum;

#endif

}  // namespace coral::replay::detail
