#pragma once
/// \file
/// The command line before CLI11 sees it: which command it names, where
/// `--config FILE` is (before or after the command: `coral --config F train`
/// and `coral train --config F` alike), and the tokens that result once a
/// config file's flags are put in.
///
/// Flags from a file go right after their command's name, before the flags
/// typed for that command; a flag typed on the command line replaces the
/// file's value (for a repeatable flag, the file's whole list), and the
/// file's value of its negation (`--run-dir D` typed drops the file's
/// `no-run-dir = true`, and the reverse).

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coral/config_file.hpp"

namespace coral::cli {

/// The command line split by command.
struct scanned_command_line {
  /// The command chosen: `coral` itself, then each command word (`envs`, `rollout`).
  std::vector<const command_info*> path;
  /// The tokens typed for each level of `path`, `--config` taken out.
  std::vector<std::vector<std::string>> tokens;
  /// The flags typed at each level of `path` (names without dashes).
  std::vector<std::set<std::string>> given;
  /// The file of `--config`, if given.
  std::optional<std::string> config;
  /// `--help` or `-h` was typed.
  bool help = false;
};

/// Splits `argv` (argv[0] is the program) by command as CLI11 will parse
/// it. Throws config_error for a word that is not a command where one is
/// expected (errors::unknown_command), no command at all
/// (errors::missing_command, unless help was asked for), `--config`
/// without a file or given twice.
[[nodiscard]] scanned_command_line scan_command_line(int argc, const char* const* argv, const command_info& root);

/// The tokens to parse (argv[0] left out): each level's command word, the
/// config file's flags for its section that were not typed, then the typed
/// tokens.
[[nodiscard]] std::vector<std::string> merge_command_line(const scanned_command_line& line, const config_values& file);

}  // namespace coral::cli
