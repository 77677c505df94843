#pragma once
/// \file
/// The one reading of "a whole number written as a float" that the
/// command's whole-number flags and the envs' int config keys share.

#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>
#include <system_error>

namespace coral {

/// `text` as a finite number with no fractional part, in decimal float
/// syntax with an optional sign (`1e6`, `+2.5e3`, `-4`, `010`, `1000.0`);
/// nullopt for anything else (`1.5`, `1e400`, `nan`, `inf`, hex, text with
/// spaces). The caller checks the range of its type.
[[nodiscard]] inline std::optional<double> whole_number(std::string_view text) noexcept {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') {
    ++first;
    if (first != last && (*first == '+' || *first == '-')) return std::nullopt;  // one sign only
  }
  if (first == last) return std::nullopt;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec != std::errc{} || ptr != last || !std::isfinite(v) || v != std::floor(v)) return std::nullopt;
  return v;
}

}  // namespace coral
