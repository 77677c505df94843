// pow_many in AVX2 and in AVX-512: pow_lanes (pow_kernel.hpp), the
// arithmetic the SSE2 kernel runs, on eight and on sixteen lanes, so the
// same bits; the AVX2 target has no FMA, and nothing is fused in AVX-512
// either (-ffp-contract=off, below).

#include "coral/replay/detail/pow_kernel.hpp"

#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CORAL_POW_AVX2 1
#include <immintrin.h>
#endif

namespace coral::replay::detail {

#if defined(CORAL_POW_AVX2)

namespace {

// One group of lanes of the vector type F (I and U its int32 and uint32
// twins) from `in` to `to` (which may be `in`); the lanes whose bit
// odd_lanes(in) sets (those outside [FLT_MIN, FLT_MAX], NaN included) take
// std::pow.
template <class F, class I, class U, unsigned (*odd_lanes)(const float*)>
[[gnu::always_inline]] inline void group(const float* in, float* to, float y, float y_hi, float y_lo) noexcept {
  constexpr int lanes = sizeof(F) / sizeof(float);
  const unsigned odd = odd_lanes(in);
  float kept[lanes];
  std::memcpy(kept, in, sizeof kept);  // `to` may be `in`
  pow_lanes<F, I, U>(kept, to, y, y_hi, y_lo);
  if (odd != 0) [[unlikely]] {
    for (int k = 0; k < lanes; ++k) {
      if ((odd >> k & 1) != 0) to[k] = std::pow(kept[k], y);
    }
  }
}

// pow_many_baseline a group at a time, the last one to lanes - 1 items
// through a padded group, so every lane takes the same path whatever n is.
template <class F, class I, class U, unsigned (*odd_lanes)(const float*)>
[[gnu::always_inline]] inline void pow_groups(const float* x, float y, float* out, std::size_t n) noexcept {
  constexpr std::size_t lanes = sizeof(F) / sizeof(float);
  float y_hi, y_lo;
  scalar::split_exponent(y, y_hi, y_lo);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) group<F, I, U, odd_lanes>(x + i, out + i, y, y_hi, y_lo);
  if (i < n) {
    float tail[lanes];
    for (float& t : tail) t = 1.0f;
    std::memcpy(tail, x + i, (n - i) * sizeof(float));
    group<F, I, U, odd_lanes>(tail, tail, y, y_hi, y_lo);
    std::memcpy(out + i, tail, (n - i) * sizeof(float));
  }
}

constexpr float flt_min = std::numeric_limits<float>::min();
constexpr float flt_max = std::numeric_limits<float>::max();

using f32x8 = float __attribute__((vector_size(32)));
using i32x8 = std::int32_t __attribute__((vector_size(32)));
using u32x8 = std::uint32_t __attribute__((vector_size(32)));
using f32x16 = float __attribute__((vector_size(64)));
using i32x16 = std::int32_t __attribute__((vector_size(64)));
using u32x16 = std::uint32_t __attribute__((vector_size(64)));

// The lanes of a group that take std::pow, as bits.
[[gnu::target("avx2")]] inline unsigned odd_lanes_avx2(const float* in) noexcept {
  const __m256 v = _mm256_loadu_ps(in);
  return static_cast<unsigned>(_mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(v, _mm256_set1_ps(flt_min), _CMP_NGE_UQ),
                                                               _mm256_cmp_ps(v, _mm256_set1_ps(flt_max), _CMP_NLE_UQ))));
}

[[gnu::target("avx512f")]] inline unsigned odd_lanes_avx512(const float* in) noexcept {
  const __m512 v = _mm512_loadu_ps(in);
  return static_cast<unsigned>(_mm512_cmp_ps_mask(v, _mm512_set1_ps(flt_min), _CMP_NGE_UQ) |
                               _mm512_cmp_ps_mask(v, _mm512_set1_ps(flt_max), _CMP_NLE_UQ));
}

}  // namespace

[[gnu::target("avx2"), gnu::flatten]] void pow_many_avx2(const float* x, float y, float* out, std::size_t n) noexcept {
  pow_groups<f32x8, i32x8, u32x8, odd_lanes_avx2>(x, y, out, n);
}

// Sixteen lanes: AVX-512 F's 32 registers hold the polynomials'
// coefficients, which AVX2's 16 reload on every pass. AVX-512 F has fused
// multiply-adds, so this file is compiled with -ffp-contract=off
// (replay/CMakeLists.txt): a fused product and sum would round once less
// than the other sets and give other bits.
[[gnu::target("avx512f"), gnu::flatten]] void pow_many_avx512(const float* x, float y, float* out,
                                                             std::size_t n) noexcept {
  pow_groups<f32x16, i32x16, u32x16, odd_lanes_avx512>(x, y, out, n);
}

#else

void pow_many_avx2(const float* x, float y, float* out, std::size_t n) noexcept { pow_many_baseline(x, y, out, n); }

void pow_many_avx512(const float* x, float y, float* out, std::size_t n) noexcept { pow_many_baseline(x, y, out, n); }

#endif

}  // namespace coral::replay::detail
