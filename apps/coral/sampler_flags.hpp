#pragma once
/// \file
/// The sampler flags, declared once for every command that builds a sampler
/// (`coral train`, `coral bench`): `--env`, `--env-arg`, `--topology`,
/// `--executor`, `--seed`, `--num-envs`, `--envs-per-group`, `--batch-size`,
/// `--min-batch-size`, `--batch-timeout-us`, `--threads`, `--spin-us`,
/// `--pin`, `--inference-thread`, `--on-env-error`, `--allow-non-finite`.
///
/// They are CLI11 options of the command, so the config file loader
/// (config_file.hpp) takes them as keys of the command's section, and the
/// value checks (flag_checks.hpp) apply to them as to any flag.

#include <cstddef>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "coral/actors/sampler_options.hpp"

namespace coral::cli {

/// `--spin-us` at most (one second): beyond, durations in nanoseconds overflow.
inline constexpr double max_spin_us = 1'000'000;
/// `--batch-timeout-us` at most (a minute).
inline constexpr double max_batch_timeout_us = 60'000'000;

/// What a command sets its own way: a default and the help texts that say
/// what the flag covers in that command.
struct sampler_flag_defaults {
  /// `--threads` default.
  std::size_t threads = 1;
  /// `--threads` help.
  std::string threads_help = "sampling threads";
  /// `--seed` help: what the seed seeds.
  std::string seed_help = "seed of the envs and the policy";
  /// `--allow-non-finite` help: which values it lets through.
  std::string allow_non_finite_help =
      "pass NaN/infinite rewards and observations on instead of treating them as env failures";
};

/// The sampler flags as given (on the command line or in a config file).
struct sampler_flags {
  /// `--env`, `--seed`, `--num-envs`, `--envs-per-group`, `--batch-size`,
  /// `--min-batch-size`, `--threads`, `--pin`, `--inference-thread`: the
  /// sampler's own options, with its defaults.
  actors::sampler_options options;
  std::vector<std::string> env_args;    ///< `--env-arg`, each `key=value`
  std::string envs_per_group = "auto";  ///< `--envs-per-group`: a count, or auto
  std::string topology = "pool";        ///< `--topology`
  std::string executor = "threads";     ///< `--executor`
  std::string on_env_error = "fail";    ///< `--on-env-error`
  long batch_timeout_us = 0;            ///< `--batch-timeout-us`
  std::string spin_us = "auto";         ///< `--spin-us`: microseconds, or auto
  bool allow_non_finite = false;        ///< `--allow-non-finite`
  // Set by add_sampler_flags: the options whose presence matters, not only
  // their value (a flag given counts, even at its default value).
  const CLI::Option* threads_flag = nullptr;        ///< `--threads`
  const CLI::Option* topology_flag = nullptr;       ///< `--topology`
  const CLI::Option* batch_size_flag = nullptr;     ///< `--batch-size` (0 inside means the topology's default)
  const CLI::Option* batch_timeout_flag = nullptr;  ///< `--batch-timeout-us`
};

/// Adds the sampler flags to `command`, storing into `flags` (which must
/// outlive the parse); sets `flags.options.threads` to `defaults.threads`
/// first, so that the help shows it.
void add_sampler_flags(CLI::App& command, sampler_flags& flags, const sampler_flag_defaults& defaults = {});

/// The sampler options `flags` give. Throws config_error, before anything
/// starts, for flags that contradict each other, each as given on the
/// command line or in a config file: `--threads` above 1 with `--executor
/// single` (errors::conflicting_flags), `--batch-timeout-us` without
/// `--min-batch-size` (errors::flag_needs); and for a bad `--env-arg`,
/// `--topology`, `--executor` or `--on-env-error` (each parser's error,
/// naming the flag), and an `--envs-per-group` that is neither auto nor a
/// count of at least 1. The wiring itself (resolve_wiring) is checked by the
/// sampler.
[[nodiscard]] actors::sampler_options to_sampler_options(const sampler_flags& flags);

/// Refuses a sampler of `o` that cannot fit in this machine's memory, naming
/// --num-envs (actors::check_memory), before anything is built: `coral
/// bench` and `coral tune`.
void check_sampler_memory(const actors::sampler_options& o);

}  // namespace coral::cli
