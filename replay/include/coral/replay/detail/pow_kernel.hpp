#pragma once
/// \file
/// x^y for many floats x and one exponent y in [-1, 1]: a replay buffer's
/// leaves (priority^alpha) and importance weights ((p / p_min)^-beta), four
/// at a time. Within 1.6 ulp of the exact power over normal positive x (1.58
/// at worst over 28 million random x and 14 exponents;
/// tests/replay/pow_kernel_test.cpp measures it against pow in double and
/// requires 2), where glibc's powf is within 0.5; about 27 instructions an
/// item with SSE2 instead of about 64 for a powf call, whose two calls an
/// item were 15% of a prioritized sample plus update.
///
/// The method: x = 2^e m with m in [sqrt(1/2), sqrt(2)); log2(m) = r q(r)
/// with r = m - 1 (exact) and q a degree-8 polynomial (log_poly below);
/// t = y (e + log2 m) with y split in two so that y_hi e is exact; t = n + f
/// with n the nearest integer; 2^f = 1 + f s(f) with s of degree 5
/// (exp_poly); 2^n applied as two factors
/// so that n up to +-252 never builds a bad exponent. The coefficients are
/// near-minimax fits (Chebyshev nodes) rounded to float.
///
/// The SSE2 kernel, its AVX2 and AVX-512 twins (eight and sixteen lanes,
/// src/pow_kernel.cpp, chosen at run time) and the plain C++ version do the
/// same float operations in the same order, so they give the same bits
/// (unless the compiler fuses a product and a sum into an FMA, which the
/// plain version then rounds once less: the tests compare bits only where
/// __FP_FAST_FMAF is not defined; the AVX2 function's target does not
/// include FMA, and src/pow_kernel.cpp, whose AVX-512 target does, is
/// compiled with -ffp-contract=off). Zero, subnormal,
/// infinite and NaN x take std::pow, lane by lane.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "coral/replay/detail/isa.hpp"

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
// 1.5 * 2^23: t + this - this is t rounded to a whole number (|t| < 2^22).
inline constexpr float round_shift = 12582912.0f;
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

/// q(r) and s(f) (pow_coeff): the terms from the third on by Estrin's
/// scheme (pairs of coefficients, then pairs of pairs by r^2 and r^4), the
/// first two by Horner's, whose last steps keep the error of the whole
/// within that of Horner's alone (a full Estrin's was 2.0 ulp at worst
/// against 1.6). The same operations in the same order for a float and for
/// a vector of floats (T), so every lane count gives the same bits. The
/// chain is ten products and sums long for q instead of sixteen, and eight
/// for s instead of ten: pow_many is bound by the chains' latency, so the
/// shorter chains make it faster, most with the narrower vectors
/// (BENCHMARKS.md).
/// (In and out by reference: a vector passed or returned by value by a
/// function without its target has another ABI, which GCC warns of even
/// where it inlines.)
template <class T>
[[gnu::always_inline]] inline void log_poly(const T& r, T& q) noexcept {
  using namespace pow_coeff;
  const T r2 = r * r;
  const T r4 = r2 * r2;
  const T c23 = r * log_q[3] + log_q[2], c45 = r * log_q[5] + log_q[4], c67 = r * log_q[7] + log_q[6];
  const T c2345 = r2 * c45 + c23, c678 = r2 * log_q[8] + c67;
  const T tail = r4 * c678 + c2345;  // terms 2 to 8, over r^2
  q = (tail * r + log_q[1]) * r + log_q[0];
}

template <class T>
[[gnu::always_inline]] inline void exp_poly(const T& f, T& s) noexcept {
  using namespace pow_coeff;
  const T f2 = f * f;
  const T tail = f2 * (f * exp_s[5] + exp_s[4]) + (f * exp_s[3] + exp_s[2]);  // terms 2 to 5, over f^2
  s = (tail * f + exp_s[1]) * f + exp_s[0];
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
  float q;
  log_poly(r, q);
  const float l = r * q;
  const float hi = y_hi * e;
  const float lo = y_lo * e + y * l;
  const float t = hi + lo;
  const auto n = static_cast<std::int32_t>(std::nearbyint(t));  // to nearest, ties to even, as cvtps2dq
  const float f = (hi - static_cast<float>(n)) + lo;
  float s;
  exp_poly(f, s);
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

/// pow_normal on every lane of a vector (GCC and Clang vector extensions):
/// F holds the floats, I and U the int32 and uint32 lanes of the same count.
/// Reads the lanes from `in`, writes them to `out`. The same operations in
/// the same order as scalar::pow_normal, written once for every lane count,
/// so that SSE2, AVX2 and AVX-512 give the same bits by construction; only
/// operators and builtins, no call that passes a vector, so that an AVX2 or
/// AVX-512 caller can inline it whole. Lanes that are not normal positive
/// floats come out as garbage (the callers replace them).
template <class F, class I, class U>
[[gnu::always_inline]] inline void pow_lanes(const float* in, float* out, float y, float y_hi, float y_lo) noexcept {
  using namespace pow_coeff;
  F x;
  std::memcpy(&x, in, sizeof x);
  const I bits = __builtin_bit_cast(I, x);
  const I mantissa = bits & 0x7fffff;
  const I big = mantissa > sqrt2_mantissa;  // -1 where big
  // 0x3f800000 - (big & 0x00800000): exponent field of 1/2 where big, of 1 elsewhere.
  const I one_or_half = 0x3f800000 - (big & 0x00800000);
  const F m = __builtin_bit_cast(F, mantissa | one_or_half);
  const I biased = __builtin_bit_cast(I, __builtin_bit_cast(U, bits) >> 23);
  const F e = __builtin_convertvector((biased - 127) - big, F);
  const F r = m - 1.0f;
  F q;
  scalar::log_poly(r, q);
  const F l = r * q;
  const F hi = y_hi * e;
  const F lo = y_lo * e + y * l;
  const F t = hi + lo;
  // The nearest integer, ties to even, as nearbyint: adding and removing
  // 1.5 * 2^23 rounds |t| < 2^22 to a whole number in the default rounding
  // mode, which the truncating conversion then keeps.
  const I n = __builtin_convertvector((t + round_shift) - round_shift, I);
  const F f = (hi - __builtin_convertvector(n, F)) + lo;
  F s;
  scalar::exp_poly(f, s);
  const F p = 1.0f + f * s;
  const I n1 = n >> 1, n2 = n - n1;
  const F power = p * __builtin_bit_cast(F, (n1 + 127) << 23) * __builtin_bit_cast(F, (n2 + 127) << 23);
  std::memcpy(out, &power, sizeof power);
}

#if defined(__SSE2__)

namespace sse2 {

using f32x4 = float __attribute__((vector_size(16)));
using i32x4 = std::int32_t __attribute__((vector_size(16)));
using u32x4 = std::uint32_t __attribute__((vector_size(16)));

// Four lanes of scalar::pow_normal, from `in` to `out`.
inline void pow_normal(const float* in, float* out, float y, float y_hi, float y_lo) noexcept {
  pow_lanes<f32x4, i32x4, u32x4>(in, out, y, y_hi, y_lo);
}

}  // namespace sse2

#endif

/// out[i] = x[i]^y for i < n, y in [-1, 1] (unchecked); out may be x. The
/// baseline instruction set's version.
inline void pow_many_baseline(const float* x, float y, float* out, std::size_t n) noexcept {
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
    sse2::pow_normal(kept, to, y, y_hi, y_lo);
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

/// pow_many_baseline eight lanes at a time, the same bits; only where
/// isa_available(isa::avx2) (elsewhere it runs the baseline).
void pow_many_avx2(const float* x, float y, float* out, std::size_t n) noexcept;

/// The same sixteen lanes at a time (AVX-512 F); only where
/// isa_available(isa::avx512).
void pow_many_avx512(const float* x, float y, float* out, std::size_t n) noexcept;

/// out[i] = x[i]^y for i < n, y in [-1, 1] (unchecked); out may be x; in
/// the instruction set `which` (available, unchecked).
inline void pow_many(isa which, const float* x, float y, float* out, std::size_t n) noexcept {
  if (which == isa::avx512) {
    pow_many_avx512(x, y, out, n);
  } else if (which == isa::avx2) {
    pow_many_avx2(x, y, out, n);
  } else {
    pow_many_baseline(x, y, out, n);
  }
}

/// The same in the widest instruction set this CPU has.
inline void pow_many(const float* x, float y, float* out, std::size_t n) noexcept {
  pow_many(best_isa(), x, y, out, n);
}

}  // namespace coral::replay::detail
