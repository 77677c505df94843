#include "coral/json.hpp"

#include <cmath>

#include <fmt/format.h>

namespace coral::cli::json {

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string number(double x) { return std::isfinite(x) ? fmt::format("{}", x) : "null"; }

std::string array(std::span<const float> xs) {
  std::string out = "[";
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (i > 0) out += ',';
    out += std::isfinite(xs[i]) ? fmt::format("{}", xs[i]) : "null";
  }
  return out + "]";
}

std::string array(std::span<const std::int32_t> xs) { return fmt::format("[{}]", fmt::join(xs, ",")); }

}  // namespace coral::cli::json
