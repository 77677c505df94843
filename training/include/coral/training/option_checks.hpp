#pragma once
/// \file
/// The error every option check throws, for algorithms' checks to name the flag at fault.

#include <string_view>

#include <fmt/format.h>

#include "coral/actors/errors.hpp"
#include "coral/core/error.hpp"

namespace coral::training::detail {

/// Throws config_error: `flag` has `value`, which breaks `requirement`.
[[noreturn]] inline void out_of_range(std::string_view flag, const auto& value, std::string_view requirement) {
  throw config_error(fmt::format(fmt::runtime(actors::errors::flag_out_of_range), flag, value, requirement));
}

}  // namespace coral::training::detail
