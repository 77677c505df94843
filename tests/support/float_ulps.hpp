#pragma once
/// \file
/// Test support: how far a float result is from the exact value, in units
/// of the float spacing at the exact value (its binade's; the subnormals'
/// 2^-149 below the normal range). Measured at the exact value, not at the
/// float it rounds to: an exact value just under a power of two that rounds
/// up to it is measured in the finer spacing below it.

#include <algorithm>
#include <cmath>

namespace coral::test {

inline double float_ulps(float got, double exact) {
  const double spacing = exact == 0.0 ? std::ldexp(1.0, -149)
                                      : std::max(std::ldexp(1.0, std::ilogb(exact) - 23), std::ldexp(1.0, -149));
  return std::abs(static_cast<double>(got) - exact) / spacing;
}

}  // namespace coral::test
