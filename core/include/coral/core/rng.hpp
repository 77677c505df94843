#pragma once
/// \file
/// `rng`: the random number generator every env, policy and replay sampler
/// owns, seeded from (seed, stream index): an env's stream is its global index.
///
/// xoshiro256** (Blackman and Vigna), its state filled by splitmix64 from the
/// pair. The generator and the helpers below are written out here rather than
/// taken from <random>'s distributions, whose outputs differ between standard
/// libraries: a trajectory depends only on the seed, the env index and coral's
/// version, not on the compiler.

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace coral {

namespace detail {
__extension__ typedef unsigned __int128 uint128;
}  // namespace detail

/// Which stream an env draws from: the run's seed and the env's global index.
struct env_seed {
  std::uint64_t seed = 0;       ///< the run's seed (`--seed`)
  std::uint64_t env_index = 0;  ///< the env's index among all envs of the run
};

/// A small, fast PRNG; satisfies std::uniform_random_bit_generator.
///
/// Thread safety: none; each env owns its own.
class rng {
 public:
  using result_type = std::uint64_t;

  /// Seeds from (seed, env index). Distinct pairs give unrelated streams.
  explicit rng(env_seed s) noexcept { reseed(s); }

  /// Seeds from a single number (same as env_seed{seed, 0}).
  explicit rng(std::uint64_t seed = 0) noexcept { reseed(env_seed{seed, 0}); }

  /// Restarts the stream of (seed, env index).
  void reseed(env_seed s) noexcept {
    std::uint64_t x = mix(s.seed) ^ mix(s.env_index + 0x632BE59BD9B4E019ULL);
    for (auto& word : state_) {
      x += 0x9E3779B97F4A7C15ULL;
      word = mix(x);
    }
  }

  /// Smallest value operator() returns.
  static constexpr result_type min() noexcept { return 0; }
  /// Largest value operator() returns.
  static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }

  /// Next 64 random bits.
  result_type operator()() noexcept {
    const std::uint64_t result = std::rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = std::rotl(state_[3], 45);
    return result;
  }

  /// Uniform double in [0, 1), 53 random bits.
  double uniform() noexcept { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }

  /// Uniform double in [low, high).
  double uniform(double low, double high) noexcept { return low + (high - low) * uniform(); }

  /// Uniform integer in [0, n), unbiased (Lemire's method). n must be > 0.
  std::uint64_t below(std::uint64_t n) noexcept {
    detail::uint128 m = static_cast<detail::uint128>((*this)()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
      const std::uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<detail::uint128>((*this)()) * n;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }

  /// True with probability p.
  bool bernoulli(double p) noexcept { return uniform() < p; }

  /// Standard normal sample (Box–Muller; one value per call).
  double normal() noexcept {
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  // splitmix64's finaliser.
  static std::uint64_t mix(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  std::uint64_t state_[4]{};
};

}  // namespace coral
