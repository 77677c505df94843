#include "coral/flag_checks.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "coral/config_file.hpp"
#include "coral/core/error.hpp"
#include "coral/core/whole_number.hpp"
#include "coral/errors.hpp"

namespace coral::cli {
namespace {

template <class... Args>
std::string text(std::string_view format, Args&&... args) {
  return fmt::format(fmt::runtime(format), std::forward<Args>(args)...);
}

// The name of at_most's validator for `limit`: how add_checks finds a
// flag's documented bound.
constexpr std::string_view at_most_prefix = "at-most:";

// The bound at_most() put on `o`, if any.
std::optional<double> documented_bound(CLI::Option& o) {
  for (int i = 0;; ++i) {
    const CLI::Validator* v = nullptr;
    try {
      v = o.get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      return std::nullopt;
    }
    const std::string& name = v->get_name();
    if (name.starts_with(at_most_prefix)) return std::strtod(name.c_str() + at_most_prefix.size(), nullptr);
  }
}

// Checks and rewrites `s` as a decimal whole number of type T. A value
// beyond T quotes `bound` (the flag's documented largest value) when the
// flag has one, else T's largest.
template <class T>
std::string check_whole(std::string& s, bool must_be_non_negative, std::optional<double> bound = std::nullopt) {
  if (const auto digits = without_plus(s); digits && !digits->empty()) {
    const char* last = digits->data() + digits->size();
    T value{};
    const auto [ptr, ec] = std::from_chars(digits->data(), last, value);
    if (ec == std::errc{} && ptr == last) {
      if constexpr (std::is_signed_v<T>) {
        if (must_be_non_negative && value < 0) return text(errors::negative_value, s);
      }
      s = fmt::format("{}", value);  // decimal: CLI11 would read 010 as octal
      return {};
    }
  }
  const auto v = whole_number(s);
  if (!v) {
    // `-1.5` or `-abc` for an unsigned flag: the sign is the first thing wrong.
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (must_be_non_negative && !s.empty() && end == s.c_str() + s.size() && d < 0) {
      return text(errors::negative_value, s);
    }
    return text(errors::not_whole_number, s);
  }
  if (must_be_non_negative && *v < 0) return text(errors::negative_value, s);
  // 2^64 and 2^63 are exact doubles; the largest values below them are not,
  // so compare against the powers themselves.
  const double limit = std::is_signed_v<T> ? 9223372036854775808.0 : 18446744073709551616.0;
  if (*v >= limit && bound) return text(errors::number_too_large, s, *bound);
  if (*v >= limit) return text(errors::number_too_large, s, std::numeric_limits<T>::max());
  if (*v < -limit) return text(errors::number_too_large, s, std::numeric_limits<T>::min());
  s = fmt::format("{:.0f}", *v);
  return {};
}

// A count-or-auto flag's value: auto, or a whole number >= least. Too
// large says so; anything else names the whole allowed set.
std::string check_count_or_auto(std::string s, std::uint64_t least, std::uint64_t* value = nullptr) {
  if (s == "auto") return {};
  const std::string typed = s;
  if (auto error = check_whole<std::uint64_t>(s, true); !error.empty()) {
    if (const auto v = whole_number(typed); v && *v >= 18446744073709551616.0) return error;
    return text(errors::bad_count_or_auto, typed, least);
  }
  const std::uint64_t n = std::stoull(s);  // check_whole rewrote it in decimal
  if (n < least) return text(errors::bad_count_or_auto, typed, least);
  if (value != nullptr) *value = n;
  return {};
}

std::string check_finite(std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) return text(errors::not_a_number, s);
  if (!std::isfinite(v)) return text(errors::not_finite, s);
  return {};
}

// The whole-number checks rewrite the value (`1e6` as 1000000, `010` as 10)
// for CLI11 to convert, so they are added with transform(), which runs first
// and keeps the rewrite: check() hands a validator a copy, and CLI11 then
// converted the text as typed (`010` as octal 8, `1e6` not at all).
void add_checks(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    switch (kind_of(*o)) {
      case value_kind::unsigned_whole:
        o->transform(CLI::Validator(
            [bound = documented_bound(*o)](std::string& s) { return check_whole<std::uint64_t>(s, true, bound); }, ""));
        break;
      case value_kind::whole:
        o->transform(CLI::Validator(
            [bound = documented_bound(*o)](std::string& s) { return check_whole<std::int64_t>(s, false, bound); }, ""));
        break;
      case value_kind::number:
        o->check(CLI::Validator(check_finite, ""));
        break;
      case value_kind::count_or_auto: {
        const std::uint64_t least = least_count(o->get_lnames().empty() ? std::string() : o->get_lnames().front());
        o->check(CLI::Validator([least](std::string& s) { return check_count_or_auto(s, least); }, ""));
        break;
      }
      case value_kind::on_off:
      case value_kind::text:
        break;
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) add_checks(*sub);
}

}  // namespace

void add_value_checks(CLI::App& app) { add_checks(app); }

CLI::Validator non_negative_whole() {
  return CLI::Validator([](std::string& s) { return check_whole<std::int64_t>(s, true); }, "");
}

std::optional<std::uint64_t> count_or_auto_value(std::string_view flag, const std::string& text) {
  if (text == "auto") return std::nullopt;
  const std::string_view name = flag.substr(flag.find_first_not_of('-'));
  std::uint64_t n = 0;
  if (const auto error = check_count_or_auto(text, least_count(name), &n); !error.empty()) {
    throw config_error(fmt::format("{}: {}", flag, error));
  }
  return n;
}

CLI::Validator non_empty(std::string what) {
  return CLI::Validator([what](std::string& s) { return s.empty() ? text(errors::empty_name, what) : std::string(); },
                        "");
}

CLI::Validator at_most(double limit) {
  return CLI::Validator(
      [limit](std::string& s) {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || !(v > limit)) return std::string();
        return text(errors::number_too_large, s, limit);
      },
      "", fmt::format("{}{}", at_most_prefix, limit));
}

}  // namespace coral::cli
