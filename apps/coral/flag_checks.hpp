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

#include <cstddef>
#include <string_view>

#include <CLI/CLI.hpp>

namespace coral::cli {

/// `--spin-us` at most (one second): beyond, durations in nanoseconds overflow.
inline constexpr double max_spin_us = 1'000'000;
/// `--batch-timeout-us` at most (a minute).
inline constexpr double max_batch_timeout_us = 60'000'000;

/// Adds the checks above to every flag of `app` and of its commands, by the
/// flag's type.
void add_value_checks(CLI::App& app);

/// A whole number >= 0, for a signed flag that must not be negative
/// (`--batch-timeout-us`, `--spin-us`).
[[nodiscard]] CLI::Validator non_negative_whole();

/// A number at most `limit` (errors::number_too_large); values that are
/// not numbers are left to the other checks.
[[nodiscard]] CLI::Validator at_most(double limit);

/// The sampler flags of `coral bench` and `coral train` that contradict each
/// other, each as given on the command line or in a config file: `--threads`
/// above 1 with `--executor single` (errors::conflicting_flags), and
/// `--batch-timeout-us` without `--min-batch-size` (errors::flag_needs).
/// Throws config_error.
void check_sampler_conflicts(std::string_view executor, const CLI::Option& threads_flag, std::size_t threads,
                             const CLI::Option& batch_timeout_flag, std::size_t min_batch_size);

}  // namespace coral::cli
