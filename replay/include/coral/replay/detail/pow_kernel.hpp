#pragma once
/// \file
/// x^y for many floats x and one exponent y in [-1, 1]: a replay buffer's
/// leaves (priority^alpha) and importance weights ((p / p_min)^-beta), four
/// at a time. Within 1.4 ulp of the exact power over every normal positive x
/// (tests/replay/pow_kernel_test.cpp measures it against pow in double and
/// requires 2), where glibc's powf is within 0.5; about 27 instructions an
/// item with SSE2 instead of about 64 for a powf call, whose two calls an
/// item were 15% of a prioritized sample plus update.
///
/// The method: x = 2^e m with m in [sqrt(1/2), sqrt(2)); log2(m) = r q(r)
/// with r = m - 1 (exact) and q a degree-8 polynomial; t = y (e + log2 m)
/// with y split in two so that y_hi e is exact; t = n + f with n the nearest
/// integer; 2^f = 1 + f s(f) with s of degree 5; 2^n applied as two factors
/// so that n up to +-252 never builds a bad exponent. The coefficients are
/// near-minimax fits (Chebyshev nodes) rounded to float.
///
/// The SSE2 kernel and its plain C++ twin do the same float operations in
/// the same order, so they give the same bits (unless the compiler fuses a
/// product and a sum into an FMA, which the plain version then rounds once
/// less: the tests compare bits only where __FP_FAST_FMAF is not defined).
/// Zero, subnormal, infinite and NaN x take std::pow, lane by lane.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace coral::replay::detail {

namespace pow_coeff {
// log2(1 + r) = r q(r), r in [sqrt(1/2) - 1, sqrt(2) - 1]; q0 first.
inline constexpr float log_q[9] = {1.442694902420044f,   -0.7213473916053772f, 0.4809233844280243f,
                                   -0.3607061207294464f, 0.28762730956077576f, -0.2387852668762207f,
                                   0.21786999702453613f, -0.208847776055336f,  0.12250161916017532f};
// 2^f - 1 = f s(f), f in [-1/2, 1/2]; s0 first.
inline constexpr float exp_s[6] = {0.6931471824645996f,    0.24022650718688965f,  0.055503398180007935f,
                                   0.009618036448955536f, 0.0013396881986409426f, 0.0001546734565636143f};
// The mantissa bits of sqrt(2): above them m is halved and e raised.
inline constexpr std::int32_t sqrt2_mantissa = 0x3504f3;
}  // namespace pow_coeff

namespace scalar {

inline float from_bits(std::int32_t b) noexcept {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

inline std::int32_t to_bits(float f) noexcept {
  std::int32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

/// y_hi (y with its 12 low mantissa bits cleared, so y_hi e is exact for
/// any exponent e of a float) and y_lo = y - y_hi (exact).
inline void split_exponent(float y, float& hi, float& lo) noexcept {
  hi = from_bits(to_bits(y) & ~std::int32_t{0xfff});
  lo = y - hi;
}

/// x^y for a normal positive x and y in [-1, 1], y given split.
inline float pow_normal(float x, float y, float y_hi, float y_lo) noexcept {
  using namespace pow_coeff;
  const std::int32_t bits = to_bits(x);
  const std::int32_t mantissa = bits & 0x7fffff;
  const std::int32_t big = mantissa > sqrt2_mantissa ? 1 : 0;
  const float m = from_bits(mantissa | (big ? 0x3f000000 : 0x3f800000));
  const auto e = static_cast<float>((bits >> 23) - 127 + big);
  const float r = m - 1.0f;
  float q = log_q[8];
  for (int k = 7; k >= 0; --k) q = q * r + log_q[k];
  const float l = r * q;
  const float hi = y_hi * e;
  const float lo = y_lo * e + y * l;
  const float t = hi + lo;
  const auto n = static_cast<std::int32_t>(std::nearbyint(t));  // to nearest, ties to even, as cvtps2dq
  const float f = (hi - static_cast<float>(n)) + lo;
  float s = exp_s[5];
  for (int k = 4; k >= 0; --k) s = s * f + exp_s[k];
  const float p = 1.0f + f * s;
  const std::int32_t n1 = n >> 1, n2 = n - n1;
  return p * from_bits((n1 + 127) << 23) * from_bits((n2 + 127) << 23);
}

/// x^y for one x (y in [-1, 1]).
inline float pow_one(float x, float y) noexcept {
  if (!(x >= std::numeric_limits<float>::min() && x <= std::numeric_limits<float>::max())) return std::pow(x, y);
  float hi, lo;
  split_exponent(y, hi, lo);
  return pow_normal(x, y, hi, lo);
}

}  // namespace scalar

#if defined(__SSE2__)

namespace sse2 {

// Four lanes of scalar::pow_normal, the same operations in the same order.
inline __m128 pow_normal(__m128 x, float y, float y_hi, float y_lo) noexcept {
  using namespace pow_coeff;
  const __m128i bits = _mm_castps_si128(x);
  const __m128i mantissa = _mm_and_si128(bits, _mm_set1_epi32(0x7fffff));
  const __m128i big = _mm_cmpgt_epi32(mantissa, _mm_set1_epi32(sqrt2_mantissa));  // -1 where big
  // 0x3f800000 - (big & 0x00800000): exponent field of 1/2 where big, of 1 elsewhere.
  const __m128i one_or_half = _mm_sub_epi32(_mm_set1_epi32(0x3f800000), _mm_and_si128(big, _mm_set1_epi32(0x00800000)));
  const __m128 m = _mm_castsi128_ps(_mm_or_si128(mantissa, one_or_half));
  const __m128 e = _mm_cvtepi32_ps(_mm_sub_epi32(_mm_sub_epi32(_mm_srli_epi32(bits, 23), _mm_set1_epi32(127)), big));
  const __m128 r = _mm_sub_ps(m, _mm_set1_ps(1.0f));
  __m128 q = _mm_set1_ps(log_q[8]);
  for (int k = 7; k >= 0; --k) q = _mm_add_ps(_mm_mul_ps(q, r), _mm_set1_ps(log_q[k]));
  const __m128 l = _mm_mul_ps(r, q);
  const __m128 hi = _mm_mul_ps(_mm_set1_ps(y_hi), e);
  const __m128 lo = _mm_add_ps(_mm_mul_ps(_mm_set1_ps(y_lo), e), _mm_mul_ps(_mm_set1_ps(y), l));
  const __m128 t = _mm_add_ps(hi, lo);
  const __m128i n = _mm_cvtps_epi32(t);  // the MXCSR's rounding: to nearest, ties to even
  const __m128 f = _mm_add_ps(_mm_sub_ps(hi, _mm_cvtepi32_ps(n)), lo);
  __m128 s = _mm_set1_ps(exp_s[5]);
  for (int k = 4; k >= 0; --k) s = _mm_add_ps(_mm_mul_ps(s, f), _mm_set1_ps(exp_s[k]));
  const __m128 p = _mm_add_ps(_mm_set1_ps(1.0f), _mm_mul_ps(f, s));
  const __m128i n1 = _mm_srai_epi32(n, 1), n2 = _mm_sub_epi32(n, n1);
  const auto scale = [](__m128i k) { return _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(k, _mm_set1_epi32(127)), 23)); };
  return _mm_mul_ps(_mm_mul_ps(p, scale(n1)), scale(n2));
}

}  // namespace sse2

#endif

/// out[i] = x[i]^y for i < n, y in [-1, 1] (unchecked); out may be x.
inline void pow_many(const float* x, float y, float* out, std::size_t n) noexcept {
  float y_hi, y_lo;
  scalar::split_exponent(y, y_hi, y_lo);
#if defined(__SSE2__)
  const __m128 lowest = _mm_set1_ps(std::numeric_limits<float>::min());
  const __m128 highest = _mm_set1_ps(std::numeric_limits<float>::max());
  // Four lanes from `in` to `to`; lanes outside [FLT_MIN, FLT_MAX] (NaN
  // included) take std::pow.
  const auto four = [&](const float* in, float* to) {
    const __m128 v = _mm_loadu_ps(in);
    const int odd = _mm_movemask_ps(_mm_or_ps(_mm_cmpnge_ps(v, lowest), _mm_cmpnle_ps(v, highest)));
    float kept[4];
    _mm_storeu_ps(kept, v);  // `to` may be `in`
    _mm_storeu_ps(to, sse2::pow_normal(v, y, y_hi, y_lo));
    if (odd != 0) [[unlikely]] {
      for (int k = 0; k < 4; ++k) {
        if ((odd >> k & 1) != 0) to[k] = std::pow(kept[k], y);
      }
    }
  };
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) four(x + i, out + i);
  if (i < n) {
    // The last one to three through a padded group, so every lane takes the
    // same path whatever n is.
    float tail[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    std::memcpy(tail, x + i, (n - i) * sizeof(float));
    four(tail, tail);
    std::memcpy(out + i, tail, (n - i) * sizeof(float));
  }
#else
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i];
    out[i] = v >= std::numeric_limits<float>::min() && v <= std::numeric_limits<float>::max()
                 ? scalar::pow_normal(v, y, y_hi, y_lo)
                 : std::pow(v, y);
  }
#endif
}

}  // namespace coral::replay::detail
