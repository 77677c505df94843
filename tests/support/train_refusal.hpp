#pragma once
/// \file
/// What learners::validate() says of a run's options (test/refusal.hpp), for
/// the tests of the built-in algorithms.

#include <string>

#include "coral/learners/train.hpp"
#include "refusal.hpp"

namespace coral::test {

/// The config_error text learners::validate(o) throws, or "(accepted)".
[[nodiscard]] inline std::string refusal(const training::train_options& o) {
  return refusal_of([&] { learners::validate(o); });
}

}  // namespace coral::test
