// detail::stratified_masses in AVX-512 F/DQ (detail/strata_kernel.hpp).

#include "coral/replay/detail/strata_kernel.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CORAL_STRATA_AVX512 1
#include <immintrin.h>
#endif

namespace coral::replay::detail {

namespace {

#if defined(CORAL_STRATA_AVX512)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // see tree_kernels.cpp
#endif

// Eight draws a step: the counters of draws i..i+7 in one register, their
// finalisers by 64-bit products (AVX-512 DQ), the top 53 bits converted
// exactly, then the same sum and product as strata::mass.
[[gnu::target("avx512f,avx512dq")]] std::size_t masses_avx512(std::uint64_t seed, double stratum, double* out,
                                                              std::size_t n) noexcept {
  using strata::golden;
  const __m512i step = _mm512_set1_epi64(static_cast<long long>(8 * golden));
  const __m512i mix1 = _mm512_set1_epi64(static_cast<long long>(strata::mix1));
  const __m512i mix2 = _mm512_set1_epi64(static_cast<long long>(strata::mix2));
  const __m512d scale = _mm512_set1_pd(0x1.0p-53);
  const __m512d strata_width = _mm512_set1_pd(stratum);
  const __m512d eight = _mm512_set1_pd(8.0);
  __m512i counter = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(seed)),
                                     _mm512_mullo_epi64(_mm512_set_epi64(8, 7, 6, 5, 4, 3, 2, 1),
                                                        _mm512_set1_epi64(static_cast<long long>(golden))));
  __m512d index = _mm512_set_pd(7, 6, 5, 4, 3, 2, 1, 0);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m512i z = counter;
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)), mix1);
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)), mix2);
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
    const __m512d u = _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_srli_epi64(z, 11)), scale);
    _mm512_storeu_pd(out + i, _mm512_mul_pd(_mm512_add_pd(index, u), strata_width));
    counter = _mm512_add_epi64(counter, step);
    index = _mm512_add_pd(index, eight);
  }
  return i;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif

}  // namespace

void stratified_masses(isa which, std::uint64_t seed, double stratum, double* out, std::size_t n) noexcept {
  std::size_t i = 0;
#if defined(CORAL_STRATA_AVX512)
  if (which == isa::avx512) i = masses_avx512(seed, stratum, out, n);
#endif
  (void)which;
  for (; i < n; ++i) out[i] = strata::mass(seed, i, stratum);
}

}  // namespace coral::replay::detail
