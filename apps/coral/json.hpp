#pragma once
/// \file
/// The little JSON the `coral` command prints: one object per line.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace coral::cli::json {

/// `s` as a JSON string literal, quotes included.
[[nodiscard]] std::string quote(std::string_view s);

/// `x` in the shortest form that reads back exactly; `null` if not finite.
[[nodiscard]] std::string number(double x);

/// A JSON array of floats (non-finite elements as null).
[[nodiscard]] std::string array(std::span<const float> xs);

/// A JSON array of integers.
[[nodiscard]] std::string array(std::span<const std::int32_t> xs);

}  // namespace coral::cli::json
