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

/// `text` without its one optional leading `+` (std::from_chars takes a
/// `-` but not a `+`); nullopt when another sign follows it (`+-1`, `++1`),
/// which from_chars would otherwise read as a number.
[[nodiscard]] inline std::optional<std::string_view> without_plus(std::string_view text) noexcept {
  if (text.empty() || text.front() != '+') return text;
  text.remove_prefix(1);
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) return std::nullopt;
  return text;
}

/// `text` as a finite number with no fractional part, in decimal float
/// syntax with an optional sign (`1e6`, `+2.5e3`, `-4`, `010`, `1000.0`);
/// nullopt for anything else (`1.5`, `1e400`, `nan`, `inf`, hex, text with
/// spaces). The caller checks the range of its type.
[[nodiscard]] inline std::optional<double> whole_number(std::string_view text) noexcept {
  const auto digits = without_plus(text);
  if (!digits || digits->empty()) return std::nullopt;
  const char* last = digits->data() + digits->size();
  double v = 0;
  const auto [ptr, ec] = std::from_chars(digits->data(), last, v);
  if (ec != std::errc{} || ptr != last || !std::isfinite(v) || v != std::floor(v)) return std::nullopt;
  return v;
}

}  // namespace coral
