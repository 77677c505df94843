// The batch passes of priority_tree (detail::descend, detail::pick_leaves,
// detail::refresh_groups, detail::search_level) in the baseline
// instruction set, AVX2 and AVX-512, chosen at run time. The vector kernels
// form the same running ends and the same group sums as tree_kernels.hpp's,
// adding in the same order, so the tree stays a function of its leaves on
// every CPU; tests/replay/priority_tree_test.cpp compares them bit for bit.

#include "coral/replay/detail/tree_kernels.hpp"

#include <algorithm>
#include <bit>
#include <limits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CORAL_TREE_AVX2 1
#include <immintrin.h>
#endif

namespace coral::replay::detail {

namespace {

constexpr std::size_t line_bytes = 64;

const char* line(const void* base, std::size_t i) noexcept { return static_cast<const char*>(base) + i * line_bytes; }

// The loops over a batch, for a set of line kernels (`Kernels::row`, ...):
// inlined whole into each instruction set's entry point (gnu::flatten), so
// that the AVX2 kernels are compiled into an AVX2 function. The descent's
// two are unrolled by four, a small but repeatable gain for
// find_prefix_many.
template <class Kernels>
inline void descend_loop(const double* level, std::size_t* nodes, double* masses, std::size_t n,
                         const void* next) noexcept {
  typename Kernels::state s;
#pragma GCC unroll 4
  for (std::size_t i = 0; i < n; ++i) {
    const double* row = level + nodes[i] * 8;
    unsigned c = Kernels::row(row, masses[i], s);
    if (c == 8) [[unlikely]] c = past_end(row, 8, masses[i]);
    nodes[i] = nodes[i] * 8 + c;
    __builtin_prefetch(line(next, nodes[i]));
  }
}

template <class Kernels>
inline void pick_leaves_loop(const float* leaves, std::size_t* nodes, const double* masses, std::size_t n) noexcept {
  typename Kernels::state s;
#pragma GCC unroll 4
  for (std::size_t i = 0; i < n; ++i) {
    const float* group = leaves + nodes[i] * 16;
    unsigned c = Kernels::group(group, masses[i], s);
    if (c == 16) [[unlikely]] {
      double unused = 0.0;
      c = past_end(group, 16, unused);
    }
    nodes[i] = nodes[i] * 16 + c;
  }
}

// The groups' pass of set_many, for a set of line kernels (`Kernels::sum`,
// `Kernels::min`): the leaves written `lag` draws ahead of the groups, so
// that a group's line is read long after the stores into it.
template <class Kernels>
inline std::size_t refresh_groups_loop(float* leaves, const float* values, double* group_sums, float* group_mins,
                                       const std::size_t* idx, std::size_t n, std::size_t* changed) noexcept {
  constexpr std::size_t lag = prefetch_distance;
  const auto write = [&](std::size_t i) {
    if (i + lag < n) __builtin_prefetch(leaves + idx[i + lag], 1);
    leaves[idx[i]] = values[i];
  };
  for (std::size_t i = 0; i < std::min(n, lag); ++i) write(i);
  std::size_t moved = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i + lag < n) {
      write(i + lag);
      const std::size_t ahead = idx[i + lag] / 16;
      __builtin_prefetch(group_sums + ahead, 1);
      __builtin_prefetch(group_mins + ahead, 1);
    }
    const std::size_t g = idx[i] / 16;
    // A minimum is never a zero or a NaN, so its bits compare as it does.
    const auto old_min = std::bit_cast<std::uint32_t>(group_mins[g]);
    group_sums[g] = Kernels::sum(leaves + g * 16);
    const float new_min = Kernels::min(leaves + g * 16);
    group_mins[g] = new_min;
    changed[moved] = g;  // branch-free: whether it moved is a coin flip to the predictor
    moved += std::bit_cast<std::uint32_t>(new_min) != old_min ? 1 : 0;
  }
  return moved;
}

struct baseline_kernels {
  struct state {};
  static unsigned row(const double* c, double& mass, state&) noexcept { return row_pick(c, mass); }
  static unsigned group(const float* l, double mass, state&) noexcept { return group_pick(l, mass); }
  static double sum(const float* l) noexcept { return group_sum(l); }
  static float min(const float* l) noexcept { return group_min(l); }
};

#if defined(CORAL_TREE_AVX2)

#define CORAL_AVX2 [[gnu::target("avx2")]]

// The running ends of a block of four children plus `carry` (in every lane):
// x0, x0 + x1, (x0 + x1) + x2, (x0 + x1) + (x2 + x3), the rule's order.
CORAL_AVX2 inline __m256d ends4(__m256d x, __m256d carry) noexcept {
  const __m256d zero = _mm256_setzero_pd();
  // x + [0, x0, 0, x2]: pairs p = [x0, x0 + x1, x2, x2 + x3]
  const __m256d p = _mm256_add_pd(x, _mm256_unpacklo_pd(zero, x));
  // p + [0, 0, p1, p1]
  return _mm256_add_pd(_mm256_add_pd(p, _mm256_blend_pd(_mm256_permute4x64_pd(p, 0b01'01'00'00), zero, 0b0011)),
                       carry);
}

CORAL_AVX2 inline __m256d last_lane(__m256d x) noexcept { return _mm256_permute4x64_pd(x, 0b11'11'11'11); }

CORAL_AVX2 inline unsigned at_or_below(__m256d ends, __m256d mass, unsigned i) noexcept {
  return static_cast<unsigned>(_mm256_movemask_pd(_mm256_cmp_pd(ends, mass, _CMP_LE_OQ))) << i;
}

CORAL_AVX2 inline unsigned row_pick_avx2(const double* c, double& mass) noexcept {
  const __m256d m = _mm256_set1_pd(mass);
  const __m256d e0 = ends4(_mm256_load_pd(c), _mm256_setzero_pd());
  const __m256d e1 = ends4(_mm256_load_pd(c + 4), last_lane(e0));
  alignas(32) double ends[12];  // ends[3] = 0, then end i at ends[i + 4]
  ends[3] = 0.0;
  _mm256_store_pd(ends + 4, e0);
  _mm256_store_pd(ends + 8, e1);
  const unsigned bits = at_or_below(e0, m, 0) | at_or_below(e1, m, 4);
  return accept_count<true>(bits, 8, ends + 3, mass);
}

CORAL_AVX2 inline unsigned group_pick_avx2(const float* l, double mass) noexcept {
  const __m256d m = _mm256_set1_pd(mass);
  const __m256d e0 = ends4(_mm256_cvtps_pd(_mm_load_ps(l)), _mm256_setzero_pd());
  const __m256d e1 = ends4(_mm256_cvtps_pd(_mm_load_ps(l + 4)), last_lane(e0));
  const __m256d e2 = ends4(_mm256_cvtps_pd(_mm_load_ps(l + 8)), last_lane(e1));
  const __m256d e3 = ends4(_mm256_cvtps_pd(_mm_load_ps(l + 12)), last_lane(e2));
  const unsigned bits = at_or_below(e0, m, 0) | at_or_below(e1, m, 4) | at_or_below(e2, m, 8) | at_or_below(e3, m, 12);
  return accept_count<false>(bits, 16, nullptr, mass);
}

// group_sum's sum in group_sum's order. With the 128-bit lanes (l0, l1),
// (l2, l3), ... named L0..L7, the pairs are P0 = L0 + L1, P1 = L2 + L3,
// P2 = L4 + L5, P3 = L6 + L7 (two adds of 256 bits, [L0, L4] + [L1, L5]
// and [L2, L6] + [L3, L7]), then the quads [P0 + P1, P2 + P3] and the
// halves; each lane holds the even leaves' sum or the odd ones'. In
// registers of at most 256 bits, which Zen 4 runs in one pass where it
// splits a 512-bit operation in two, so updates are faster there than with
// the line in two registers of eight doubles (BENCHMARKS.md). AVX
// instructions only, so the AVX2 groups' pass takes it too: it is faster
// there as well than pairing the floats before converting them.
CORAL_AVX2 inline double group_sum_lanes(const float* l) noexcept {
  const __m256d a0 = _mm256_cvtps_pd(_mm_load_ps(l)), a1 = _mm256_cvtps_pd(_mm_load_ps(l + 4));
  const __m256d b0 = _mm256_cvtps_pd(_mm_load_ps(l + 8)), b1 = _mm256_cvtps_pd(_mm_load_ps(l + 12));
  const __m256d p02 = _mm256_add_pd(_mm256_permute2f128_pd(a0, b0, 0x20), _mm256_permute2f128_pd(a0, b0, 0x31));
  const __m256d p13 = _mm256_add_pd(_mm256_permute2f128_pd(a1, b1, 0x20), _mm256_permute2f128_pd(a1, b1, 0x31));
  const __m256d q = _mm256_add_pd(p02, p13);
  const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(q), _mm256_extractf128_pd(q, 1));
  return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}

// group_min by the leaves' bits: floats >= 0 order as their bits do as
// unsigned integers, and less one a 0 leaf wraps to the largest and drops
// out of the minimum; a -0 leaf (0x80000000) becomes 0x7fffffff, above
// every other float's bits less one, and drops out unless the group has
// nothing else, where the result's bits are 0 or 0x80000000 (absent). The
// 16 lanes are two 256-bit loads, each less one in the add that loads it,
// then halved in 256- and 128-bit registers, which Zen 4 runs in one pass
// where it splits a 512-bit operation in two, and the bits need no 512-bit
// and to clear the sign: both make updates faster there (BENCHMARKS.md).
// AVX2 instructions only, so the AVX2 groups' pass takes it too, where it
// is faster than compares and blends of floats. The same value as
// group_min for every leaf >= 0.
CORAL_AVX2 inline float group_min_bits(const float* l) noexcept {
  const __m256i less_one = _mm256_set1_epi32(-1);
  const __m256i h = _mm256_min_epu32(_mm256_add_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(l)), less_one),
                                     _mm256_add_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(l + 8)), less_one));
  __m128i q = _mm_min_epu32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  q = _mm_min_epu32(q, _mm_shuffle_epi32(q, 0b01'00'11'10));
  q = _mm_min_epu32(q, _mm_shuffle_epi32(q, 0b10'11'00'01));
  const unsigned bits = static_cast<unsigned>(_mm_cvtsi128_si32(q)) + 1u;
  return std::bit_cast<float>((bits << 1) == 0 ? std::bit_cast<unsigned>(absent_min) : bits);
}

struct avx2_kernels {
  struct state {};
  CORAL_AVX2 static unsigned row(const double* c, double& mass, state&) noexcept { return row_pick_avx2(c, mass); }
  CORAL_AVX2 static unsigned group(const float* l, double mass, state&) noexcept {
    return group_pick_avx2(l, mass);
  }
  CORAL_AVX2 static double sum(const float* l) noexcept { return group_sum_lanes(l); }
  CORAL_AVX2 static float min(const float* l) noexcept { return group_min_bits(l); }
};

// The same picks on a whole line in one register of eight doubles
// (AVX-512 F, DQ and VL). Each lane is formed by the same adds as ends4's:
// within a block of four the pairs p = [x0, x0 + x1, x2, x2 + x3], then
// p + [0, 0, p1, p1], then the carry (0 for a line's first block, the
// block before's last end after it), so the ends are the AVX2 ends bit for
// bit. Only adds of zero where ends4 adds a zero carry, which keep the
// bits of a sum that is never negative.
#define CORAL_AVX512 [[gnu::target("avx512f,avx512dq,avx512vl")]]

// GCC 12's AVX-512 intrinsics pass an uninitialised "undefined" vector as
// the unused source of their unmasked forms, and -Wmaybe-uninitialized
// reports it once they are inlined; the value is never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// Lane `lane` of x in every lane.
CORAL_AVX512 inline __m512d broadcast_lane(__m512d x, long long lane) noexcept {
  return _mm512_permutexvar_pd(_mm512_set1_epi64(lane), x);
}

// The picks below behave as bound by their uops on the two ports that run
// 512-bit arithmetic on Intel cores (one of them the only shuffle port),
// so they spend as few uops there as they can: the lanes a sum skips are
// zeroed by the masks of the shuffles that feed it (the AVX2 kernels' zero
// adds), not by ands with constants; shifted and broadcast copies come
// from memory where the line is there (a load uop); a row's remainder is
// the mass less one of its ends read back from a store, not a vector of
// remainders.
// On those cores this makes the descent and the leaf step a few percent
// faster a draw (BENCHMARKS.md).
//
// What a pass keeps: the masks (odd lanes, lanes 2-3 of each block, the
// second block) and a row's running ends. The masks are loaded into mask
// registers from memory at each use (a load uop): GCC otherwise keeps them
// in general registers and moves them over at each use, which takes the
// shuffle port.
struct line_state {
  std::uint8_t odd = 0xaa, upper_pair = 0xcc, second_block = 0xf0;
  alignas(64) double ends[16];  // ends[7] = 0, then end i at ends[i + 8]
  line_state() noexcept { ends[7] = 0.0; }
};

CORAL_AVX512 inline __mmask8 mask(const std::uint8_t& bits) noexcept {
  __mmask8 k;
  asm("kmovb %1, %0" : "=k"(k) : "m"(bits));
  return k;
}

// [x0, x0, x2, x2, x4, x4, x6, x6] of the line at c, by a load: a
// vmovddup from memory is done by the load unit on recent Intel cores, so
// it takes no shuffle port (measured as part of the change above).
CORAL_AVX512 inline __m512d even_pairs(const double* c) noexcept {
  __m512d d;
  asm("vmovddup %1, %0" : "=v"(d) : "m"(*reinterpret_cast<const __m512d*>(c)));
  return d;
}

// `x` in every lane, by the load unit (GCC turns a set1 of a value it
// holds in a register into a shuffle).
CORAL_AVX512 inline __m512d broadcast_from(const double& x) noexcept {
  __m512d m;
  asm("vbroadcastsd %1, %0" : "=v"(m) : "m"(x));
  return m;
}

// Lane `lane` of x in the lanes of `k`, 0 in the others.
CORAL_AVX512 inline __m512d lanes_of(__m512d x, long long lane, __mmask8 k) noexcept {
  return _mm512_maskz_permutexvar_pd(k, _mm512_set1_epi64(lane), x);
}

// Within each block of four, p + [0, 0, p1, p1] of the pairs p: the
// block's running ends without their carry.
CORAL_AVX512 inline __m512d quads(__m512d p, const line_state& s) noexcept {
  return _mm512_add_pd(p, _mm512_maskz_permutex_pd(mask(s.upper_pair), p, 0b01'01'00'00));
}

CORAL_AVX512 inline unsigned row_pick_avx512(const double* c, double& mass, line_state& s) noexcept {
  const __m512d x = _mm512_load_pd(c);
  const __m512d q = quads(_mm512_mask_add_pd(x, mask(s.odd), x, even_pairs(c)), s);
  const __m512d e = _mm512_add_pd(q, lanes_of(q, 3, mask(s.second_block)));
  _mm512_store_pd(s.ends + 8, e);
  const auto bits = static_cast<unsigned>(_mm512_cmp_pd_mask(e, broadcast_from(mass), _CMP_LE_OQ));
  return accept_count<true>(bits, 8, s.ends + 7, mass);
}

// The pairs of eight leaves as doubles: x + [0, x0, 0, x2, ...].
CORAL_AVX512 inline __m512d leaf_pairs(__m512d x, const line_state& s) noexcept {
  return _mm512_add_pd(x, _mm512_maskz_movedup_pd(mask(s.odd), x));
}

CORAL_AVX512 inline unsigned group_pick_avx512(const float* l, const double& mass, line_state& s) noexcept {
  const __m512d ql = quads(leaf_pairs(_mm512_cvtps_pd(_mm256_load_ps(l)), s), s);
  const __m512d qh = quads(leaf_pairs(_mm512_cvtps_pd(_mm256_load_ps(l + 8)), s), s);
  const __m512d low = _mm512_add_pd(ql, lanes_of(ql, 3, mask(s.second_block)));  // ends 0-7
  // Blocks three and four: the third plus end 7, the fourth plus the
  // third's last end.
  const __m512d third = _mm512_add_pd(qh, broadcast_lane(low, 7));  // lanes 0-3 final
  const __m512d high = _mm512_mask_add_pd(third, mask(s.second_block), qh, broadcast_lane(third, 3));
  const __m512d m = broadcast_from(mass);
  const unsigned bits = static_cast<unsigned>(_mm512_cmp_pd_mask(low, m, _CMP_LE_OQ)) |
                        static_cast<unsigned>(_mm512_cmp_pd_mask(high, m, _CMP_LE_OQ)) << 8;
  double unused = mass;  // a group's pick has no remainder
  return accept_count<false>(bits, 16, nullptr, unused);
}

// merge_level's one pass as a search per draw: the level's running ends
// (left to right, as the merge forms them) in a table, then for each draw
// the number of rows of eight whose last end is at or below the mass (two
// compares), and within that row the number of ends at or below it: no
// branch on where a draw goes, and no draw waits for the one before.
CORAL_AVX512 [[gnu::flatten]] bool search_level_avx512(const double* level, std::size_t width, std::size_t* nodes,
                                                       double* masses, std::size_t n, const void* next) noexcept {
  constexpr std::size_t most = 128;
  if (width == 0 || width > most) return false;
  // ends[j]: end of node j for j < width - 1; from the last node on (it
  // takes the rest) a NaN, which no compare counts, so that a draw's node
  // is never past the last, whatever its mass. befores[j]: end of node
  // j - 1 (0 for node 0).
  alignas(64) double ends[most];
  alignas(64) double befores[most];
  alignas(64) double row_ends[16];
  const std::size_t last = width - 1;
  double before = 0.0;
  for (std::size_t j = 0; j < last; ++j) {
    befores[j] = before;
    before += level[j];
    ends[j] = before;
  }
  befores[last] = before;
  const double last_end = before + level[last];
  for (std::size_t j = last; j < most; ++j) ends[j] = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t r = 0; r < 16; ++r) row_ends[r] = ends[8 * r + 7];
  const __m512d rows_low = _mm512_load_pd(row_ends), rows_high = _mm512_load_pd(row_ends + 8);
  for (std::size_t i = 0; i < n; ++i) {
    const double mass = masses[i];
    const __m512d m = _mm512_set1_pd(mass);
    const unsigned rows = static_cast<unsigned>(_mm512_cmp_pd_mask(rows_low, m, _CMP_LE_OQ)) |
                          static_cast<unsigned>(_mm512_cmp_pd_mask(rows_high, m, _CMP_LE_OQ)) << 8;
    const std::size_t r = static_cast<std::size_t>(__builtin_popcount(rows));  // at most 15: ends[127] is a NaN
    const auto within = static_cast<unsigned>(_mm512_cmp_pd_mask(_mm512_load_pd(ends + 8 * r), m, _CMP_LE_OQ));
    std::size_t j = 8 * r + static_cast<std::size_t>(__builtin_popcount(within));
    double remainder = mass - befores[j];
    if (j == last && last_end <= mass) [[unlikely]] {
      // At or past the level's end (by rounding): the last node with mass.
      while (j > 0 && !(level[j] > 0.0)) --j;
      remainder = level[j] * 0.5;
    }
    nodes[i] = j;
    masses[i] = remainder;
    __builtin_prefetch(line(next, j));
  }
  return true;
}

struct avx512_kernels {
  using state = line_state;
  CORAL_AVX512 static unsigned row(const double* c, double& mass, state& s) noexcept {
    return row_pick_avx512(c, mass, s);
  }
  CORAL_AVX512 static unsigned group(const float* l, const double& mass, state& s) noexcept {
    return group_pick_avx512(l, mass, s);
  }
  CORAL_AVX512 static double sum(const float* l) noexcept { return group_sum_lanes(l); }
  CORAL_AVX512 static float min(const float* l) noexcept { return group_min_bits(l); }
};

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif

[[gnu::flatten]] void descend_baseline(const double* level, std::size_t* nodes, double* masses, std::size_t n,
                                       const void* next) noexcept {
  descend_loop<baseline_kernels>(level, nodes, masses, n, next);
}

[[gnu::flatten]] void pick_leaves_baseline(const float* leaves, std::size_t* nodes, const double* masses,
                                           std::size_t n) noexcept {
  pick_leaves_loop<baseline_kernels>(leaves, nodes, masses, n);
}

[[gnu::flatten]] std::size_t refresh_groups_baseline(float* leaves, const float* values, double* group_sums,
                                                    float* group_mins, const std::size_t* idx, std::size_t n,
                                                    std::size_t* changed) noexcept {
  return refresh_groups_loop<baseline_kernels>(leaves, values, group_sums, group_mins, idx, n, changed);
}

#if defined(CORAL_TREE_AVX2)
CORAL_AVX2 [[gnu::flatten]] std::size_t refresh_groups_avx2(float* leaves, const float* values, double* group_sums,
                                                            float* group_mins, const std::size_t* idx,
                                                            std::size_t n, std::size_t* changed) noexcept {
  return refresh_groups_loop<avx2_kernels>(leaves, values, group_sums, group_mins, idx, n, changed);
}

CORAL_AVX2 [[gnu::flatten]] void descend_avx2(const double* level, std::size_t* nodes, double* masses, std::size_t n,
                                              const void* next) noexcept {
  descend_loop<avx2_kernels>(level, nodes, masses, n, next);
}

CORAL_AVX2 [[gnu::flatten]] void pick_leaves_avx2(const float* leaves, std::size_t* nodes, const double* masses,
                                                  std::size_t n) noexcept {
  pick_leaves_loop<avx2_kernels>(leaves, nodes, masses, n);
}

CORAL_AVX512 [[gnu::flatten]] void descend_avx512(const double* level, std::size_t* nodes, double* masses,
                                                  std::size_t n, const void* next) noexcept {
  descend_loop<avx512_kernels>(level, nodes, masses, n, next);
}

CORAL_AVX512 [[gnu::flatten]] std::size_t refresh_groups_avx512(float* leaves, const float* values,
                                                                double* group_sums, float* group_mins,
                                                                const std::size_t* idx, std::size_t n,
                                                                std::size_t* changed) noexcept {
  return refresh_groups_loop<avx512_kernels>(leaves, values, group_sums, group_mins, idx, n, changed);
}

CORAL_AVX512 [[gnu::flatten]] void pick_leaves_avx512(const float* leaves, std::size_t* nodes, const double* masses,
                                                      std::size_t n) noexcept {
  pick_leaves_loop<avx512_kernels>(leaves, nodes, masses, n);
}
#endif

}  // namespace

void descend(isa which, const double* level, std::size_t* nodes, double* masses, std::size_t n,
             const void* next) noexcept {
#if defined(CORAL_TREE_AVX2)
  if (which == isa::avx512) return descend_avx512(level, nodes, masses, n, next);
  if (which == isa::avx2) return descend_avx2(level, nodes, masses, n, next);
#endif
  (void)which;
  descend_baseline(level, nodes, masses, n, next);
}

std::size_t refresh_groups(isa which, float* leaves, const float* values, double* group_sums, float* group_mins,
                           const std::size_t* idx, std::size_t n, std::size_t* changed) noexcept {
#if defined(CORAL_TREE_AVX2)
  if (which == isa::avx512) return refresh_groups_avx512(leaves, values, group_sums, group_mins, idx, n, changed);
  if (which == isa::avx2) return refresh_groups_avx2(leaves, values, group_sums, group_mins, idx, n, changed);
#endif
  (void)which;
  return refresh_groups_baseline(leaves, values, group_sums, group_mins, idx, n, changed);
}

bool search_level(isa which, const double* level, std::size_t width, std::size_t* nodes, double* masses,
                  std::size_t n, const void* next) noexcept {
#if defined(CORAL_TREE_AVX2)
  if (which == isa::avx512) return search_level_avx512(level, width, nodes, masses, n, next);
#endif
  (void)which, (void)level, (void)width, (void)nodes, (void)masses, (void)n, (void)next;
  return false;
}

void pick_leaves(isa which, const float* leaves, std::size_t* nodes, const double* masses, std::size_t n) noexcept {
#if defined(CORAL_TREE_AVX2)
  if (which == isa::avx512) return pick_leaves_avx512(leaves, nodes, masses, n);
  if (which == isa::avx2) return pick_leaves_avx2(leaves, nodes, masses, n);
#endif
  (void)which;
  pick_leaves_baseline(leaves, nodes, masses, n);
}

}  // namespace coral::replay::detail
