#include "coral/envs/config.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/core/error.hpp"
#include "coral/core/whole_number.hpp"
#include "coral/envs/errors.hpp"

namespace coral::envs {
namespace {

std::string expected_text(const config_key& key) {
  std::string text(to_string(key.type));
  if (key.type == config_type::boolean) return "bool (true or false)";
  if (key.type == config_type::text) return text;
  if (key.min && key.max) return fmt::format("{} in [{}, {}]", text, *key.min, *key.max);
  if (key.min) return fmt::format("{} >= {}", text, *key.min);
  if (key.max) return fmt::format("{} <= {}", text, *key.max);
  return text;
}

/// `text` as a whole number in int64's range written in float syntax
/// (`1e3`, `2.5e3`), as the command's whole-number flags take it.
std::optional<std::int64_t> parse_whole(std::string_view text) {
  const auto d = whole_number(text);
  // 2^63 is an exact double; the largest int64 is not.
  if (!d || *d >= 9223372036854775808.0 || *d < -9223372036854775808.0) return std::nullopt;
  return static_cast<std::int64_t>(*d);
}

std::optional<config_value> parse_value(const config_key& key, std::string_view text) {
  // One optional `+`, then digits (from_chars takes a `-` but not a `+`).
  const auto digits = without_plus(text);
  const char* first = digits ? digits->data() : nullptr;
  const char* last = digits ? digits->data() + digits->size() : nullptr;
  switch (key.type) {
    case config_type::integer: {
      if (!digits || digits->empty()) return std::nullopt;
      std::int64_t v = 0;
      auto [ptr, ec] = std::from_chars(first, last, v);
      if (ec != std::errc{} || ptr != last) {
        // A whole number written as a float (`1e3`, `2.5e3`), as the
        // command's whole-number flags take (docs/cli.md).
        const auto whole = parse_whole(text);
        if (!whole) return std::nullopt;
        v = *whole;
      }
      if ((key.min && static_cast<double>(v) < *key.min) || (key.max && static_cast<double>(v) > *key.max)) {
        return std::nullopt;
      }
      return v;
    }
    case config_type::real: {
      if (!digits || digits->empty()) return std::nullopt;
      double v = 0;
      auto [ptr, ec] = std::from_chars(first, last, v);
      if (ec != std::errc{} || ptr != last || !std::isfinite(v)) return std::nullopt;
      if ((key.min && v < *key.min) || (key.max && v > *key.max)) return std::nullopt;
      return v;
    }
    case config_type::boolean:
      if (text == "true" || text == "1") return true;
      if (text == "false" || text == "0") return false;
      return std::nullopt;
    case config_type::text:
      return std::string(text);
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(config_type t) noexcept {
  switch (t) {
    case config_type::integer:
      return "int";
    case config_type::real:
      return "float";
    case config_type::boolean:
      return "bool";
    case config_type::text:
      return "string";
  }
  return "?";
}

std::string to_string(const config_value& v) {
  return std::visit([](auto x) { return fmt::format("{}", x); }, v);
}

std::pair<std::string, std::string> parse_env_arg(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw config_error(fmt::format(fmt::runtime(errors::malformed_env_arg), text));
  }
  return {std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

config_args parse_env_args(const std::vector<std::string>& texts) {
  config_args args;
  args.reserve(texts.size());
  for (const auto& t : texts) args.push_back(parse_env_arg(t));
  return args;
}

env_config::env_config(std::string_view env_name, const std::vector<config_key>& keys, const config_args& args)
    : env_name_(env_name) {
  for (const auto& [name, text] : args) {
    bool known = false;
    for (const auto& k : keys) known = known || k.name == name;
    if (!known) {
      std::vector<std::string_view> names;
      for (const auto& k : keys) names.push_back(k.name);
      throw config_error(fmt::format(fmt::runtime(errors::unknown_key), env_name, name,
                                     names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
    }
  }
  // A key given twice is a mistake in what was typed or composed, not an
  // override: which one was meant cannot be told.
  for (std::size_t i = 0; i < args.size(); ++i) {
    for (std::size_t j = i + 1; j < args.size(); ++j) {
      if (args[i].first == args[j].first) {
        throw config_error(fmt::format(fmt::runtime(errors::repeated_key), env_name, args[i].first, args[i].second,
                                       args[j].second));
      }
    }
  }
  for (const auto& k : keys) {
    std::string_view text = k.default_value;
    for (const auto& [name, value] : args) {
      if (name == k.name) text = value;
    }
    auto v = parse_value(k, text);
    if (!v) {
      throw config_error(
          fmt::format(fmt::runtime(errors::bad_config_value), env_name, k.name, text, expected_text(k)));
    }
    values_.emplace_back(k.name, *v);
  }
}

const config_value* env_config::find(std::string_view key) const noexcept {
  for (const auto& [name, v] : values_) {
    if (name == key) return &v;
  }
  return nullptr;
}

std::int64_t env_config::get_int(std::string_view key) const {
  const auto* v = find(key);
  if (v == nullptr || !std::holds_alternative<std::int64_t>(*v)) {
    throw usage_error(fmt::format(fmt::runtime(errors::config_access), key, "int"));
  }
  return std::get<std::int64_t>(*v);
}

double env_config::get_float(std::string_view key) const {
  const auto* v = find(key);
  if (v == nullptr || !std::holds_alternative<double>(*v)) {
    throw usage_error(fmt::format(fmt::runtime(errors::config_access), key, "float"));
  }
  return std::get<double>(*v);
}

bool env_config::get_bool(std::string_view key) const {
  const auto* v = find(key);
  if (v == nullptr || !std::holds_alternative<bool>(*v)) {
    throw usage_error(fmt::format(fmt::runtime(errors::config_access), key, "bool"));
  }
  return std::get<bool>(*v);
}

const std::string& env_config::get_string(std::string_view key) const {
  const auto* v = find(key);
  if (v == nullptr || !std::holds_alternative<std::string>(*v)) {
    throw usage_error(fmt::format(fmt::runtime(errors::config_access), key, "string"));
  }
  return std::get<std::string>(*v);
}

void env_config::reject(std::string_view key, std::string_view reason) const {
  throw config_error(fmt::format(fmt::runtime(errors::inconsistent_config), env_name_, key, reason));
}

}  // namespace coral::envs
