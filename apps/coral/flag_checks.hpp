#pragma once
/// \file
/// Checks every `coral` flag shares, added to the CLI11 declarations.
///
/// CLI11 reads an unsigned flag with strtoull, which wraps `-1` to 2^64 − 1
/// and takes `010` as octal, and takes `nan` and `inf` for a number. These
/// validators run before CLI11 converts a value (on the command line and on
/// values from a config file alike):
/// - a flag of an unsigned type (UINT) takes a whole number >= 0 in decimal
///   (`1e6` is taken as 1000000); a negative value is named as negative
///   (errors::negative_value);
/// - a flag of a signed type (INT) takes a whole number in its range;
/// - a number flag (FLOAT) takes a finite number (errors::not_finite).
/// Each error is CLI11's `--flag: <text>` with a text from coral/errors.hpp.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace coral::cli {

/// Adds the checks above to every flag of `app` and of its commands, by the
/// flag's type.
void add_value_checks(CLI::App& app);

/// A whole number >= 0, for a signed flag that must not be negative
/// (`--batch-timeout-us`).
[[nodiscard]] CLI::Validator non_negative_whole();

/// The value of a `UINT|auto` flag (`--envs-per-group`, `--spin-us`,
/// `--shards`), held as text because it may be a word: nullopt for `auto`,
/// else the number read as the checks above read it (`1e6` is a million,
/// `010` is ten), at least least_count(flag). Throws config_error naming
/// `flag` for any other text (the checks refuse it first, so only a caller
/// that skipped them sees that).
[[nodiscard]] std::optional<std::uint64_t> count_or_auto_value(std::string_view flag, const std::string& text);

/// A value that is not empty (errors::empty_name, with `what`: "a
/// directory name"), for a flag naming a file or directory, whose empty
/// value would otherwise mean its default or none, without a word.
[[nodiscard]] CLI::Validator non_empty(std::string what);

/// A number at most `limit` (errors::number_too_large); values that are
/// not numbers are left to the other checks.
[[nodiscard]] CLI::Validator at_most(double limit);

}  // namespace coral::cli
