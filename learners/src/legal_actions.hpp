#pragma once
// Private: the Q learners' choice among the legal actions of a masked row
// (1 = legal), shared by the acting policies (q_policy, r2d2_policy) and
// the fused targets' max and argmax, so that acting and bootstrapping pick
// alike.

#include <cstddef>
#include <cstdint>

#include "coral/core/rng.hpp"

namespace coral::learners::detail {

/// The legal index of largest `values` among [0, actions) (the first of
/// equals, as argmax picks), or `actions` when none is legal.
inline std::size_t best_legal(const float* values, const std::uint8_t* legal, std::size_t actions) noexcept {
  std::size_t best = actions;
  for (std::size_t a = 0; a < actions; ++a) {
    if (legal[a] != 0 && (best == actions || values[a] > values[best])) best = a;
  }
  return best;
}

/// One legal action drawn uniformly with `rng`, or 0 when none is legal
/// (an env guarantees an active row one).
inline std::size_t draw_legal(const std::uint8_t* legal, std::size_t actions, coral::rng& rng) {
  std::size_t count = 0;
  for (std::size_t a = 0; a < actions; ++a) count += legal[a] != 0 ? 1 : 0;
  if (count == 0) return 0;
  auto k = rng.below(count);
  for (std::size_t a = 0; a < actions; ++a) {
    if (legal[a] != 0 && k-- == 0) return a;
  }
  return 0;
}

}  // namespace coral::learners::detail
