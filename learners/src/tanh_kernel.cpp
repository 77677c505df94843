// tanh_in_place (coral/learners/tanh_kernel.hpp). Compiled with
// -fno-trapping-math (learners/CMakeLists.txt): GCC otherwise keeps both
// forms' arithmetic behind the selects as branches, in case an operation
// traps, and vectorises nothing; no operation here can trap (the division
// is by at least 2).

#include "coral/learners/tanh_kernel.hpp"

#include "coral/core/cpu_features.hpp"

#include <bit>
#include <cmath>
#include <cstdint>

namespace coral::learners {
namespace {

[[gnu::always_inline]] inline float tanh_one(float x) noexcept {
  // a + a^3 q(a^2) below 0.625.
  constexpr float q0 = -0.3333333134651184f, q1 = 0.13333211839199066f, q2 = -0.05394745245575905f,
                  q3 = 0.021703999489545822f, q4 = -0.008184662088751793f, q5 = 0.0021489840000867844f;
  // e^r = 1 + r + r^2 s(r), |r| <= ln2/2.
  constexpr float s0 = 0.5f, s1 = 0.1666666567325592f, s2 = 0.041666269302368164f, s3 = 0.00833342969417572f,
                  s4 = 0.0013946021208539605f, s5 = 0.00019826495554298162f;
  // ln 2 in two parts, the first with 16 significant bits, so that n times
  // it is exact for the n here (at most 29).
  constexpr float ln2_hi = 0.693145751953125f, ln2_lo = 1.428606765330187e-06f;
  constexpr float inv_ln2 = 1.4426950408889634f;
  constexpr float round_shift = 12582912.0f;  // 1.5 * 2^23: t + this - this is t rounded to a whole number
  constexpr float switch_at = 0.625f;
  // tanh(10) rounds to 1 in float, as does every tanh beyond; a NaN
  // compares false and becomes 10 here (and is given back at the end).
  constexpr float ceiling = 10.0f;
  const float magnitude = std::fabs(x);
  const float a = magnitude < ceiling ? magnitude : ceiling;
  const float a2 = a * a;
  const float q = ((((q5 * a2 + q4) * a2 + q3) * a2 + q2) * a2 + q1) * a2 + q0;
  const float near_zero = a + a * a2 * q;
  const float y = a + a;
  const float n = (y * inv_ln2 + round_shift) - round_shift;
  const float r = (y - n * ln2_hi) - n * ln2_lo;
  const float s = ((((s5 * r + s4) * r + s3) * r + s2) * r + s1) * r + s0;
  const float power = std::bit_cast<float>((static_cast<std::int32_t>(n) + 127) << 23);  // 2^n
  const float e2a = (1.0f + (r + r * r * s)) * power;
  const float away = 1.0f - 2.0f / (e2a + 1.0f);
  const float m = a < switch_at ? near_zero : away;
  return x != x ? x : std::copysign(m, x);
}

[[gnu::always_inline]] inline void tanh_loop(float* y, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = tanh_one(y[i]);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CORAL_TANH_AVX2 1
[[gnu::target("avx2")]] void tanh_avx2(float* y, std::size_t n) noexcept { tanh_loop(y, n); }
#endif

void tanh_baseline(float* y, std::size_t n) noexcept { tanh_loop(y, n); }

}  // namespace

void tanh_in_place(float* y, std::size_t n) noexcept {
#if defined(CORAL_TANH_AVX2)
  if (coral::host_cpu_features().avx2) return tanh_avx2(y, n);
#endif
  tanh_baseline(y, n);
}

}  // namespace coral::learners
