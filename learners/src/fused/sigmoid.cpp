// sigmoid_in_place (coral/learners/fused/layers.hpp): 1 / (1 + e^−x) with
// e^−x computed in a form the compiler vectorises (glibc's expf, one value
// at a time, was 9% of a fused R2D2 update and kept the LSTM's elementwise
// loop scalar). Compiled with -fno-trapping-math (learners/CMakeLists.txt),
// as tanh_kernel.cpp is, so that the selects vectorise.
//
// e^t = 2^n e^r, t = n ln 2 + r with |r| ≤ ln 2 / 2 (Cody and Waite's
// two-part ln 2), e^r = 1 + r + r² s(r), s the Taylor polynomial of degree
// 5 (its error below 2e-9 on that range); t clamped to [−87, 87], where
// sigmoid is 0 or 1 in float to within its rounding anyway. Within 2.5 ulp
// of the exact sigmoid over [−87, 87] (2.32 at worst over every 61st float,
// tests/learners/fused_engine_test.cpp). The AVX2 clone has no FMA: the same bits.

#include <bit>
#include <cstdint>

#include "coral/core/cpu_features.hpp"
#include "coral/learners/fused/layers.hpp"

namespace coral::learners::fused {
namespace {

[[gnu::always_inline]] inline float sigmoid_one(float x) noexcept {
  constexpr float ln2_hi = 0.693145751953125f, ln2_lo = 1.428606765330187e-06f;
  constexpr float inv_ln2 = 1.4426950408889634f;
  constexpr float round_shift = 12582912.0f;  // 1.5 × 2^23
  constexpr float s0 = 0.5f, s1 = 1.0f / 6, s2 = 1.0f / 24, s3 = 1.0f / 120, s4 = 1.0f / 720, s5 = 1.0f / 5040;
  float t = -x;
  t = t < -87.0f ? -87.0f : t;
  t = t > 87.0f ? 87.0f : t;
  t = x != x ? 0.0f : t;  // NaN: given back below
  const float n = (t * inv_ln2 + round_shift) - round_shift;
  const float r = (t - n * ln2_hi) - n * ln2_lo;
  const float s = ((((s5 * r + s4) * r + s3) * r + s2) * r + s1) * r + s0;
  const float power = std::bit_cast<float>((static_cast<std::int32_t>(n) + 127) << 23);
  const float e = (1.0f + (r + r * r * s)) * power;
  const float y = 1.0f / (1.0f + e);
  return x != x ? x : y;
}

[[gnu::always_inline]] inline void sigmoid_loop(float* y, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = sigmoid_one(y[i]);
}

void sigmoid_baseline(float* y, std::size_t n) noexcept { sigmoid_loop(y, n); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CORAL_SIGMOID_AVX2 1
[[gnu::target("avx2")]] void sigmoid_avx2(float* y, std::size_t n) noexcept { sigmoid_loop(y, n); }
#endif

}  // namespace

void sigmoid_in_place(float* y, std::size_t n) noexcept {
#if defined(CORAL_SIGMOID_AVX2)
  if (coral::host_cpu_features().avx2) return sigmoid_avx2(y, n);
#endif
  sigmoid_baseline(y, n);
}

void sigmoid_in_place_reference(float* y, std::size_t n) noexcept { sigmoid_baseline(y, n); }

}  // namespace coral::learners::fused
