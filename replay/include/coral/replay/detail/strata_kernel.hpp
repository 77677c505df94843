#pragma once
/// \file
/// The masses of a stratified prioritized sample: one uniform position in
/// each of n equal strata of the total. The uniforms come from SplitMix64
/// (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", 2014) in counter form: draw i's 64 bits are the finaliser of
/// seed + (i + 1) golden-ratio steps, the sequence that generator gives from
/// `seed`, so no draw waits for the one before. The caller's generator gives
/// only the seed. Drawn one by one from the caller's xoshiro256**, each draw
/// waited for the state the one before left: about 3 cycles a draw that no
/// other work could fill, 4% of a sample plus update of 256.
///
/// An AVX-512 kernel (src/strata_kernel.cpp, eight draws at a time, chosen
/// at run time) and the plain version below give the same bits: the
/// integer steps are exact, and the doubles are formed by the same
/// conversion, sum and product (the product by 2^-53 is exact, so a
/// compiler that fuses it with the sum changes no bit).

#include <cstddef>
#include <cstdint>

#include "coral/replay/detail/isa.hpp"

namespace coral::replay::detail {

namespace strata {

/// SplitMix64's step between counters (2^64 / the golden ratio, odd).
inline constexpr std::uint64_t golden = 0x9e3779b97f4a7c15ULL;
/// Its finaliser's two multipliers.
inline constexpr std::uint64_t mix1 = 0xbf58476d1ce4e5b9ULL;
inline constexpr std::uint64_t mix2 = 0x94d049bb133111ebULL;

/// Draw i's 64 bits for `seed`.
inline std::uint64_t bits(std::uint64_t seed, std::uint64_t i) noexcept {
  std::uint64_t z = seed + (i + 1) * golden;
  z = (z ^ (z >> 30)) * mix1;
  z = (z ^ (z >> 27)) * mix2;
  return z ^ (z >> 31);
}

/// Draw i's mass: (i + u) * stratum, u the top 53 bits as a double in
/// [0, 1).
inline double mass(std::uint64_t seed, std::uint64_t i, double stratum) noexcept {
  const double u = static_cast<double>(bits(seed, i) >> 11) * 0x1.0p-53;
  return (static_cast<double>(i) + u) * stratum;
}

}  // namespace strata

/// out[i] = strata::mass(seed, i, stratum) for every i < n, in the
/// instruction set `which` (available, unchecked); every isa gives the same
/// bits. n below 2^53.
void stratified_masses(isa which, std::uint64_t seed, double stratum, double* out, std::size_t n) noexcept;

}  // namespace coral::replay::detail
