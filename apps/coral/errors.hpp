#pragma once
/// \file
/// Error texts of the `coral` command (fmt format strings); tests assert
/// them exactly. The command prints each as `error: <text>` and exits with
/// the code docs/cli.md gives.

#include <string_view>

namespace coral::cli::errors {

/// A word where a command was expected: the command path typed, the commands there.
inline constexpr std::string_view unknown_command = "unknown command '{}'; commands: {}";
/// No command given: the commands.
inline constexpr std::string_view missing_command = "a command is required; commands: {}";

/// Number flags (CLI11 prefixes the flag: `--seed: -1 is negative: ...`).
/// A negative value for a flag that counts or sizes something: the value.
inline constexpr std::string_view negative_value = "{} is negative: it must be >= 0";
/// Not a whole number: the value.
inline constexpr std::string_view not_whole_number = "'{}' is not a whole number";
/// A whole number beyond the flag's type: the value, the largest allowed.
inline constexpr std::string_view number_too_large = "{} is too large (at most {})";
/// Anything else wrong with a count-or-auto flag (`--shards -1`, `0`,
/// `many`): the value, the smallest count.
inline constexpr std::string_view bad_count_or_auto = "invalid value '{}' (allowed: auto, or a whole number >= {})";
/// An empty value for a flag that names something (`--checkpoint-dir=`,
/// often an unset shell variable): what the flag names.
inline constexpr std::string_view empty_name = "expected {}, got an empty value";
/// Not a number: the value.
inline constexpr std::string_view not_a_number = "'{}' is not a number";
/// NaN or infinite: the value.
inline constexpr std::string_view not_finite = "{} is not a finite number";

/// Two flags that cannot be given together: flag (with value), other flag, why.
inline constexpr std::string_view conflicting_flags = "{} conflicts with {}: {}";
/// A flag that means nothing without another: flag, the flag it needs, why.
inline constexpr std::string_view flag_needs = "{} needs {}: {}";

/// `--config` without a file name.
inline constexpr std::string_view config_needs_file = "--config: expected a file name";
/// `--config` given twice: first file, second file.
inline constexpr std::string_view config_twice = "--config: given twice ('{}' and '{}'); give one file";
/// A config file that cannot be opened or read (missing, not a regular file): file, reason.
inline constexpr std::string_view config_unreadable = "config file '{}': cannot read it: {}";
/// A config file larger than any config: file, its size limit.
inline constexpr std::string_view config_too_large = "config file '{}': larger than {} bytes; not a config file";
/// A config file with bytes that are not UTF-8 text: file, line, the byte.
inline constexpr std::string_view config_not_text =
    "config file '{}', line {}: not a TOML text file (byte 0x{:02x} is not UTF-8 text)";
/// Keys, tables and arrays nested too deeply: file, line, the deepest allowed.
inline constexpr std::string_view config_too_deep =
    "config file '{}', line {}: nested more than {} levels deep (table and key parts, inline tables and arrays "
    "together)";
/// TOML syntax error: file, line, column, toml++'s description.
inline constexpr std::string_view config_syntax = "config file '{}', line {}, column {}: {}";
/// A key no command takes: file, line, key, where (`in [train]`, `at the top level`), hint.
inline constexpr std::string_view config_unknown_key = "config file '{}', line {}: unknown key '{}' {}{}";
/// A table that is not a command's section: file, line, section, the sections.
inline constexpr std::string_view config_unknown_section =
    "config file '{}', line {}: unknown section [{}] (sections: {})";
/// A command flag outside any section: file, line, key, global keys, a section that takes it.
inline constexpr std::string_view config_top_level_key =
    "config file '{}', line {}: key '{}' is not a global flag (global keys: {}); put it in a section such as [{}]";
/// A value of the wrong type: file, line, section and key, what was expected, what was found.
inline constexpr std::string_view config_wrong_type = "config file '{}', line {}: {}: expected {}, got {}";

/// `coral envs rollout --actions` for a multi-agent env with the wrong
/// number of row actions: the entry, its position (from 1), actions given,
/// rows of the env.
inline constexpr std::string_view wrong_action_count =
    "--actions: action '{}' (number {}) gives {} row actions, expected {} (one per agent row, separated by '/') "
    "or 1 for every row";
/// A row action with the wrong number of scalars: the entry, its position, scalars given, scalars expected, the space.
inline constexpr std::string_view wrong_scalar_count =
    "--actions: action '{}' (number {}) has {} scalars separated by ':', expected {} for the action space {}";

/// `coral envs rollout`: the env threw or produced a non-finite value: env name, step, what.
inline constexpr std::string_view rollout_env_failed = "env '{}' failed at step {}: {}";
/// `--video` for an env whose render() draws nothing: the env name.
inline constexpr std::string_view env_does_not_render =
    "--video: env '{}' does not render (docs/envs.md lists the envs that do)";

/// coral tune cannot write its config file: the path.
inline constexpr std::string_view tune_unwritable = "--out: cannot write '{}': {}";
/// The sweep's config, printed when --out could not be written: the file.
inline constexpr std::string_view tune_written_here = "could not write {}; the config it would hold:\n";

/// A run that needs libtorch, from a `coral` without it, and no coral-torch
/// to hand it to: the paths looked at.
inline constexpr std::string_view torch_program_missing =
    "this run needs the libtorch learners, which this coral hands to coral-torch; none found at {}";
/// execv() of coral-torch failed: its path and the system's reason.
inline constexpr std::string_view torch_program_failed = "could not start {}: {}";

/// `coral eval --episodes` outside [1, max]: the value, the most episodes.
inline constexpr std::string_view episodes_out_of_range = "{} is out of range: evaluate 1 to {} episodes";
/// `coral eval` on an env with several agents per env: the env, its agents.
inline constexpr std::string_view eval_multi_agent =
    "--checkpoint: env '{}' has {} agents per env; coral eval runs single-agent envs";
/// `coral eval`: the env threw or produced a non-finite value: env name, episode (from 1), step in it, what.
inline constexpr std::string_view eval_env_failed = "env '{}' failed in episode {} at step {}: {}";

}  // namespace coral::cli::errors
