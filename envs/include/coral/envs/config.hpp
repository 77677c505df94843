#pragma once
/// \file
/// Per-env config: the keys an env declares (type, default, range) and the
/// validated values an env is built from.
///
/// Config arrives as text `key=value` pairs (`--env-arg`, a TOML file); it is
/// checked against the declared keys before any env is built. Errors are
/// coral::config_error with a text from coral::envs::errors that names the
/// env and the key.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace coral::envs {

/// The type of a config value.
enum class config_type {
  integer,  ///< decimal integer (64-bit)
  real,     ///< decimal floating-point number, finite
  boolean,  ///< `true`/`false` (also `1`/`0`)
  text,     ///< any text, taken as given (e.g. a file path)
};

/// The name of a config type as shown to users: `int`, `float`, `bool`, `string`.
[[nodiscard]] std::string_view to_string(config_type t) noexcept;

/// One key an env declares.
struct config_key {
  std::string name;                 ///< e.g. `episode_length`
  config_type type = config_type::integer;
  std::string default_value;        ///< text, parsed like a user's value
  std::string description;          ///< one line, shown by `coral envs`
  std::optional<double> min = {};   ///< inclusive lower bound (integer and real keys)
  std::optional<double> max = {};   ///< inclusive upper bound (integer and real keys)
};

/// A typed config value.
using config_value = std::variant<std::int64_t, double, bool, std::string>;

/// Text `key=value` pairs as given by a user, in order; a later pair for the same key wins.
using config_args = std::vector<std::pair<std::string, std::string>>;

/// Splits `key=value` (first '=' separates). Throws config_error
/// (errors::malformed_env_arg) if there is no '=' or the key is empty.
[[nodiscard]] std::pair<std::string, std::string> parse_env_arg(std::string_view text);

/// Splits every `key=value` of a repeated `--env-arg` flag.
[[nodiscard]] config_args parse_env_args(const std::vector<std::string>& texts);

/// The validated config of one env: every declared key has a value (the
/// user's or the default), of the declared type, within range.
class env_config {
 public:
  /// An empty config (for envs that declare no keys).
  env_config() = default;

  /// Validates `args` against `keys` of env `env_name`: unknown keys, values
  /// that do not parse and values out of range throw config_error naming the
  /// key. Missing keys take their defaults.
  env_config(std::string_view env_name, const std::vector<config_key>& keys, const config_args& args);

  /// The value of an integer key. Throws usage_error if `key` is not a declared integer key.
  [[nodiscard]] std::int64_t get_int(std::string_view key) const;
  /// The value of a real key. Throws usage_error if `key` is not a declared real key.
  [[nodiscard]] double get_float(std::string_view key) const;
  /// The value of a boolean key. Throws usage_error if `key` is not a declared boolean key.
  [[nodiscard]] bool get_bool(std::string_view key) const;
  /// The value of a text key. Throws usage_error if `key` is not a declared text key.
  [[nodiscard]] const std::string& get_string(std::string_view key) const;

  /// Every key and its value, in declaration order.
  [[nodiscard]] const std::vector<std::pair<std::string, config_value>>& values() const noexcept { return values_; }

  /// The name of the env this config was validated for.
  [[nodiscard]] const std::string& env_name() const noexcept { return env_name_; }

  /// Throws config_error (errors::inconsistent_config) naming `key`, for
  /// checks across keys that an env makes in its constructor.
  [[noreturn]] void reject(std::string_view key, std::string_view reason) const;

 private:
  [[nodiscard]] const config_value* find(std::string_view key) const noexcept;

  std::string env_name_;
  std::vector<std::pair<std::string, config_value>> values_;
};

/// A config value as text (`12`, `0.5`, `true`).
[[nodiscard]] std::string to_string(const config_value& v);

}  // namespace coral::envs
