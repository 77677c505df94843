// pow_many in AVX2: pow_lanes (pow_kernel.hpp), the arithmetic the SSE2
// kernel runs, on eight lanes, so the same bits; the target is AVX2 alone,
// without FMA, so no product and sum are fused.

#include "coral/replay/detail/pow_kernel.hpp"

#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CORAL_POW_AVX2 1
#include <immintrin.h>
#endif

namespace coral::replay::detail {

#if defined(CORAL_POW_AVX2)

namespace {

#define CORAL_AVX2 [[gnu::target("avx2")]]

using f32x8 = float __attribute__((vector_size(32)));
using i32x8 = std::int32_t __attribute__((vector_size(32)));
using u32x8 = std::uint32_t __attribute__((vector_size(32)));

// Eight lanes from `in` to `to` (which may be `in`); lanes outside
// [FLT_MIN, FLT_MAX] (NaN included) take std::pow.
CORAL_AVX2 [[gnu::flatten]] inline void eight(const float* in, float* to, float y, float y_hi, float y_lo) noexcept {
  const __m256 v = _mm256_loadu_ps(in);
  const __m256 odd_lanes = _mm256_or_ps(_mm256_cmp_ps(v, _mm256_set1_ps(std::numeric_limits<float>::min()), _CMP_NGE_UQ),
                                        _mm256_cmp_ps(v, _mm256_set1_ps(std::numeric_limits<float>::max()), _CMP_NLE_UQ));
  const int odd = _mm256_movemask_ps(odd_lanes);
  float kept[8];
  _mm256_storeu_ps(kept, v);  // `to` may be `in`
  pow_lanes<f32x8, i32x8, u32x8>(kept, to, y, y_hi, y_lo);
  if (odd != 0) [[unlikely]] {
    for (int k = 0; k < 8; ++k) {
      if ((odd >> k & 1) != 0) to[k] = std::pow(kept[k], y);
    }
  }
}

}  // namespace

CORAL_AVX2 void pow_many_avx2(const float* x, float y, float* out, std::size_t n) noexcept {
  float y_hi, y_lo;
  scalar::split_exponent(y, y_hi, y_lo);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) eight(x + i, out + i, y, y_hi, y_lo);
  if (i < n) {
    // The last one to seven through a padded group, as pow_many_baseline.
    float tail[8] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
    std::memcpy(tail, x + i, (n - i) * sizeof(float));
    eight(tail, tail, y, y_hi, y_lo);
    std::memcpy(out + i, tail, (n - i) * sizeof(float));
  }
}

#else

void pow_many_avx2(const float* x, float y, float* out, std::size_t n) noexcept { pow_many_baseline(x, y, out, n); }

#endif

}  // namespace coral::replay::detail
