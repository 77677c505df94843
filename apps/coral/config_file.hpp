#pragma once
/// \file
/// The commands and flags of `coral`, as a plain description, and the strict
/// reader of TOML config files that checks a file against it.
///
/// A config file holds global flags at the top level (`log-level`) and each
/// command's flags in the command's section: `[train]`, `[bench]`, `[envs]`,
/// `[envs.rollout]`. Keys are flag names without dashes. A switch takes
/// `true` or `false`; a flag taking a whole number an integer (or a float
/// with a whole value, `1e6`); a number flag an integer or a finite float;
/// a text flag a string; a repeatable flag (`hidden`, `env-arg`) one value
/// or an array of them. Anything else is a config_error naming the file, the
/// line and the key (texts in coral/errors.hpp): a syntax error, bytes that
/// are not UTF-8 text, an unknown key or section, a command flag outside its
/// section, a value of the wrong type, keys or values nested deeper than
/// max_config_depth (refused before the TOML parser, which recurses, sees them).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace coral::cli {

/// How a flag's value is written.
enum class value_kind {
  on_off,          ///< a switch: no value on the command line, true/false in a file
  whole,           ///< a whole number
  unsigned_whole,  ///< a whole number >= 0
  number,          ///< a finite number
  text,            ///< a string
  count_or_auto,   ///< a whole number >= 0, or the word auto
};

/// The type name (CLI11's, shown in the help) that marks a count_or_auto flag.
inline constexpr std::string_view auto_or_count_type = "UINT|auto";

/// The smallest count a count_or_auto flag takes, by its name without
/// dashes: 1 for `envs-per-group` and `shards` (a group or a shard of no
/// envs is nothing), 0 for the others (`spin-us 0`: no spinning).
[[nodiscard]] std::uint64_t least_count(std::string_view name) noexcept;

/// One flag of a command.
struct flag_info {
  std::string name;              ///< without dashes: `total-steps`
  value_kind kind = value_kind::text;
  std::uint64_t least = 0;       ///< count_or_auto: the smallest count (least_count)
  bool repeatable = false;       ///< takes several values (`--hidden 64 64`, `--env-arg` repeated)
  bool extra_values = false;     ///< one occurrence may take several values (`--hidden 64 64`)
};

/// A command, its flags and its subcommands.
struct command_info {
  std::string name;     ///< `train`, `rollout`; empty for `coral` itself
  std::string path;     ///< as typed after `coral`: `envs rollout`; empty for `coral`
  std::string section;  ///< its config section: `envs.rollout`; empty for the top level
  std::vector<flag_info> flags;
  std::vector<command_info> commands;

  /// The flag named `name`, or null.
  [[nodiscard]] const flag_info* find_flag(std::string_view name) const noexcept;
  /// The subcommand named `name`, or null.
  [[nodiscard]] const command_info* find_command(std::string_view name) const noexcept;
};

/// The commands and flags `app` declares (`--help` and `--config` left out),
/// the value kind of each flag read from CLI11's type name (UINT, INT, FLOAT,
/// TEXT, or a switch).
[[nodiscard]] command_info describe_commands(const CLI::App& app);

/// The value kind of a CLI11 option.
[[nodiscard]] value_kind kind_of(const CLI::Option& option);

/// One flag set by a config file, as command-line tokens (`--seed=5`,
/// `--hidden=64`, `--hidden=64`, `--keep-going`; an empty text as
/// `--actions` and `""`), and the line it is on.
struct config_flag {
  std::string name;
  std::vector<std::string> tokens;
  std::size_t line = 0;
};

/// What a config file sets: per section (`""` for the top level, `train`,
/// `envs.rollout`), its flags in file order.
using config_values = std::map<std::string, std::vector<config_flag>>;

/// Largest config file accepted, in bytes.
inline constexpr std::size_t max_config_bytes = 1 << 20;

/// Deepest nesting a config file may have: the parts of a table header and
/// of a key, and the inline tables and arrays of its value, added up. A
/// real config needs 3.
inline constexpr std::size_t max_config_depth = 64;

/// Checks the text of a config file against `root` and returns what it
/// sets. `file` names the file in errors. Throws config_error.
[[nodiscard]] config_values parse_config(std::string_view text, std::string_view file, const command_info& root);

/// Reads `path` (a regular file of at most max_config_bytes) and parses it
/// as parse_config does. Throws config_error.
[[nodiscard]] config_values read_config(const std::string& path, const command_info& root);

}  // namespace coral::cli
