#pragma once
// Private: the learner side of the non-finite checks. A loss term or a
// weight that is NaN or infinite stops the run with an error naming the
// learner, the term (or weight) and the update, unless --allow-non-finite.

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/training/errors.hpp"

namespace coral::training::detail {

/// A run that diverged: what() names where the first non-finite value appeared.
class divergence_error : public coral::error {
 public:
  using coral::error::error;
};

/// Throws divergence_error (errors::non_finite_loss) for the first term that is not finite.
inline void check_loss_terms(std::string_view algo, std::uint64_t update,
                             std::initializer_list<std::pair<std::string_view, double>> terms) {
  for (const auto& [name, value] : terms) {
    if (!std::isfinite(value)) {
      throw divergence_error(fmt::format(fmt::runtime(errors::non_finite_loss), algo, name, value, update));
    }
  }
}

/// Throws divergence_error (errors::non_finite_weight) for the first weight that is not finite.
inline void check_weights(std::string_view algo, std::uint64_t update, std::span<const float> weights) {
  // x * 0 is 0 for finite x and NaN otherwise: a sum that vectorises.
  float probe = 0.0F;
  for (float w : weights) probe += w * 0.0F;
  if (probe == 0.0F) return;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (!std::isfinite(weights[i])) {
      throw divergence_error(fmt::format(fmt::runtime(errors::non_finite_weight), algo, i, weights[i], update));
    }
  }
}

}  // namespace coral::training::detail
