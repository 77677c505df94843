#include "coral/core/json.hpp"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace coral::json {
namespace {

// Appends `c`, a byte of well-formed UTF-8, escaped as JSON requires.
void append_escaped(std::string& out, char c) {
  switch (c) {
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default:
      break;
  }
  const auto u = static_cast<unsigned char>(c);
  if (u < 0x20) {
    out += fmt::format("\\u{:04x}", u);
  } else {
    out += c;
  }
}

// The length of the well-formed UTF-8 sequence that starts `s`, or 0.
std::size_t sequence_length(std::string_view s) noexcept {
  const auto lead = static_cast<unsigned char>(s[0]);
  if (lead < 0x80) return 1;
  std::size_t extra = 0;
  std::uint32_t min = 0;
  if ((lead & 0xE0) == 0xC0) {
    extra = 1;
    min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    extra = 2;
    min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    extra = 3;
    min = 0x10000;
  } else {
    return 0;  // a continuation byte, or 0xF8 to 0xFF
  }
  if (extra >= s.size()) return 0;  // cut short by the end
  std::uint32_t code = lead & (0x3F >> extra);
  for (std::size_t k = 1; k <= extra; ++k) {
    const auto next = static_cast<unsigned char>(s[k]);
    if ((next & 0xC0) != 0x80) return 0;
    code = (code << 6) | (next & 0x3F);
  }
  if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return extra + 1;
}

}  // namespace

std::size_t well_formed_utf8_length(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t n = sequence_length(s.substr(i));
    if (n == 0) break;
    i += n;
  }
  return i;
}

std::string quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  while (!s.empty()) {
    const std::size_t good = well_formed_utf8_length(s);
    for (const char c : s.substr(0, good)) append_escaped(out, c);
    if (good == s.size()) break;
    out += "\\ufffd";
    s.remove_prefix(good + 1);
  }
  out += '"';
  return out;
}

// fmt's `{}` for a double or a float is the shortest text that reads back
// exactly (Ryu-style), and its forms (`1e+20`, `1e-07`, `-0`) are JSON numbers.
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

}  // namespace coral::json
