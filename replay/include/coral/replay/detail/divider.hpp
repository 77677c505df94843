#pragma once
/// \file
/// `divider`: n / d for a divisor fixed at construction, by one
/// multiplication instead of a division where n and d fit in 32 bits.

#include <cstddef>
#include <cstdint>

namespace coral::replay::detail {

/// Quotients by a fixed d >= 1. With c = ceil(2^64 / d), n / d is the high
/// 64 bits of c * n for every n, d < 2^32 (Lemire, Kaser and Kurz, "Faster
/// remainder by direct computation", 2019); other n or d divide.
class divider {
 public:
  /// Divides by d (>= 1).
  explicit divider(std::uint64_t d) noexcept : d_(d), c_(d > 1 && d <= limit ? ~std::uint64_t{0} / d + 1 : 0) {}

  /// ceil(2^64 / d), for a kernel that forms quotients itself (of n and
  /// d below 2^32, as quotient() does); 0 where quotient() divides.
  [[nodiscard]] std::uint64_t magic() const noexcept { return c_; }

  /// n / d.
  [[nodiscard]] std::uint64_t quotient(std::uint64_t n) const noexcept {
    if (c_ != 0 && n <= limit) [[likely]] {
      return static_cast<std::uint64_t>((static_cast<u128>(c_) * n) >> 64);
    }
    return n / d_;
  }

 private:
  __extension__ using u128 = unsigned __int128;  // GCC and Clang, 64-bit targets
  static constexpr std::uint64_t limit = 0xffffffffu;
  std::uint64_t d_;
  std::uint64_t c_;  // ceil(2^64 / d), or 0: divide
};

}  // namespace coral::replay::detail
