// detail::make_keys in AVX-512 F/DQ (detail/key_kernels.hpp).

#include "coral/replay/detail/key_kernels.hpp"

#include <algorithm>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CORAL_KEYS_AVX512 1
#include <immintrin.h>
#endif

namespace coral::replay::detail {

namespace {

#if defined(CORAL_KEYS_AVX512)

#define CORAL_AVX512 [[gnu::target("avx512f,avx512dq,avx512vl")]]

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // see tree_kernels.cpp
#endif

// Each stream's two heads for eight slots of those streams: by gathers,
// or, with at most sixteen streams, by two-source permutes of the heads
// held in four registers (streams 0-7 and 8-15). Zen 4 gathers eight lanes
// far slower than it permutes them, so the permutes make a prioritized
// sample from few streams a few percent faster there (BENCHMARKS.md).
struct gathered_heads {
  const stream_heads& s;
  CORAL_AVX512 void operator()(__m512i stream, __m512i& head, __m512i& ring_head) const noexcept {
    head = _mm512_i64gather_epi64(stream, s.heads, 8);
    ring_head = _mm512_i64gather_epi64(stream, s.ring_heads, 8);
  }
};

inline constexpr std::size_t most_held_streams = 16;

struct held_heads {
  __m512i heads[2], ring_heads[2];
  CORAL_AVX512 explicit held_heads(const stream_heads& s) noexcept {
    for (std::size_t half = 0; half < 2; ++half) {
      const std::size_t first = 8 * half;
      const std::size_t count = s.streams > first ? std::min<std::size_t>(s.streams - first, 8) : 0;
      const auto lanes = static_cast<__mmask8>((1u << count) - 1);
      heads[half] = _mm512_maskz_loadu_epi64(lanes, s.heads + first);
      ring_heads[half] = _mm512_maskz_loadu_epi64(lanes, s.ring_heads + first);
    }
  }
  CORAL_AVX512 void operator()(__m512i stream, __m512i& head, __m512i& ring_head) const noexcept {
    head = _mm512_permutex2var_epi64(heads[0], stream, heads[1]);
    ring_head = _mm512_permutex2var_epi64(ring_heads[0], stream, ring_heads[1]);
  }
};

// The generations of eight slots (each below 2^32), as
// replay_buffer::generation derives one: the stream is the high half of
// magic * slot (formed from 32-bit products: magic = high * 2^32 + low),
// the place in the ring the rest, and the generation counts from the
// stream's lap.
template <class Heads>
CORAL_AVX512 inline __m512i generations8(const stream_heads& s, const Heads& heads_of, __m512i slot) noexcept {
  const __m512i low = _mm512_set1_epi64(static_cast<long long>(s.magic & 0xffffffffu));
  const __m512i high = _mm512_set1_epi64(static_cast<long long>(s.magic >> 32));
  const __m512i capacity = _mm512_set1_epi64(static_cast<long long>(s.stream_capacity));
  const __m512i carry = _mm512_srli_epi64(_mm512_mul_epu32(slot, low), 32);
  const __m512i stream = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epu32(slot, high), carry), 32);
  const __m512i r = _mm512_sub_epi64(slot, _mm512_mul_epu32(stream, capacity));  // place in the ring
  __m512i head, head_r;
  heads_of(stream, head, head_r);
  const __m512i lap = _mm512_sub_epi64(head, head_r);
  const __mmask8 this_lap = _mm512_cmplt_epu64_mask(r, head_r);
  const __m512i gen = _mm512_add_epi64(_mm512_add_epi64(lap, r), _mm512_set1_epi64(1));
  const __m512i aged = _mm512_mask_sub_epi64(gen, static_cast<__mmask8>(~this_lap), gen, capacity);
  const __mmask8 written = this_lap | _mm512_test_epi64_mask(lap, lap);
  return _mm512_maskz_mov_epi64(written, aged);
}

template <class Heads>
CORAL_AVX512 [[gnu::flatten]] std::size_t keys_avx512(const stream_heads& s, const Heads& heads_of,
                                                       const std::size_t* slots, std::size_t n,
                                                       std::uint64_t* keys) noexcept {
  // [slot 0, gen 0, slot 1, gen 1, ...] from the two registers.
  const __m512i first = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
  const __m512i second = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m512i slot = _mm512_loadu_si512(slots + i);
    const __m512i gen = generations8(s, heads_of, slot);
    _mm512_storeu_si512(keys + 2 * i, _mm512_permutex2var_epi64(slot, first, gen));
    _mm512_storeu_si512(keys + 2 * i + 8, _mm512_permutex2var_epi64(slot, second, gen));
  }
  return i;
}

CORAL_AVX512 std::size_t make_keys_avx512(const stream_heads& s, const std::size_t* slots, std::size_t n,
                                          std::uint64_t* keys) noexcept {
  if (s.streams <= most_held_streams) return keys_avx512(s, held_heads(s), slots, n, keys);
  return keys_avx512(s, gathered_heads{s}, slots, n, keys);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif

}  // namespace

std::size_t make_keys(isa which, const stream_heads& s, const std::size_t* slots, std::size_t n,
                      std::uint64_t* keys) noexcept {
#if defined(CORAL_KEYS_AVX512)
  if (which == isa::avx512 && s.magic != 0) return make_keys_avx512(s, slots, n, keys);
#endif
  (void)which, (void)s, (void)slots, (void)n, (void)keys;
  return 0;
}

}  // namespace coral::replay::detail
