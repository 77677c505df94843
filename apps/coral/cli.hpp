#pragma once
/// \file
/// The `coral` command: top-level flags and the registration of every
/// subcommand. Each subcommand lives in its own file (`envs_command.cpp`,
/// later `bench_command.cpp`, `train_command.cpp`) and adds itself to the
/// CLI11 app through an `add_*_command` function declared here.

#include <cstdint>
#include <functional>
#include <string_view>
#include <ostream>

#include <CLI/CLI.hpp>

#include "coral/core/exit_codes.hpp"

namespace coral::cli {

/// The exit codes of `coral` (docs/cli.md).
namespace exit_code {
/// The command did its work (`train`: the run finished, solved or not, or
/// was stopped in order by SIGINT/SIGTERM); also `--help`.
inline constexpr int ok = exit_codes::ok;
/// The input was rejected before anything started: an unknown command or
/// flag, a bad or conflicting value, a config file error, a run that does
/// not fit in memory.
inline constexpr int rejected = exit_codes::bad_input;
/// The command failed after it started: an actor or env failed, a
/// checkpoint could not be read or written, a stop deadline passed, or any
/// other error.
inline constexpr int failed = exit_codes::run_failed;
// A second SIGINT/SIGTERM ends the process at once: 128 + the signal number.
}  // namespace exit_code

/// Parses `argv`, runs the chosen subcommand writing to `out`, and returns
/// the process exit code (exit_code). Errors go to `err` as one line,
/// `error: <what>`.
///
/// Top-level flags: `--config FILE` (TOML, also accepted after the command;
/// see config_file.hpp and docs/cli.md) and `--log-level LEVEL`.
int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

/// What a program that runs `coral` in-process (Python's coral.train) can
/// hook into.
struct run_hooks {
  /// `coral train`: training::train_options::on_metrics_row.
  std::function<bool(std::string_view header, std::string_view row)> on_metrics_row;
  /// `coral train` in a program without the libtorch learners, for a run
  /// that needs them, once every flag is checked: hands the run to a
  /// program that has them (the `coral` command: hand_over_to_torch(),
  /// which does not return). Empty: the run is refused (errors::torch_not_linked).
  std::function<void()> hand_over;
};

/// Replaces this process by coral-torch (the `coral` command with the
/// libtorch learners) with the same arguments: found beside this program, or
/// in ../libexec/coral/ from it. SIGINT, SIGTERM and SIGHUP are blocked
/// first, so that one arriving now stays pending for coral-torch, which
/// stops its run at once (interrupts.hpp); one that already arrived is
/// raised again for it. Throws config_error (errors::torch_program_missing,
/// errors::torch_program_failed) if it cannot.
[[noreturn]] void hand_over_to_torch(const char* const* argv);

/// run() with hooks.
int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err, const run_hooks& hooks);

/// Adds `coral envs` (list envs, spaces and config keys) and
/// `coral envs rollout` (print a trajectory as JSON lines) to `app`.
/// Their output goes to `out`.
void add_envs_command(CLI::App& app, std::ostream& out);

/// Adds `coral bench` (sampling throughput of a topology against the plain
/// for-loop baseline, see shared/DESIGN.md's contract) to `app`.
void add_bench_command(CLI::App& app, std::ostream& out);
/// Adds `coral tune` (tune_command.cpp): the fastest wiring of an env's sampler, written as a config file.
void add_tune_command(CLI::App& app, std::ostream& out);

/// Adds `coral train` (PPO on any env and topology; progress lines, then one
/// JSON object, see shared/DESIGN.md's contract and docs/training.md) to `app`.
/// Its warnings go to `err`: `out` is progress and the JSON line.
void add_train_command(CLI::App& app, std::ostream& out, std::ostream& err, const run_hooks& hooks = {});

/// `coral eval --episodes` at most.
inline constexpr std::uint64_t max_eval_episodes = 1'000'000;

/// Adds `coral eval` (eval_command.cpp): a checkpoint's policy on fresh
/// episodes, one line each, then one JSON object (docs/cli.md).
void add_eval_command(CLI::App& app, std::ostream& out);

}  // namespace coral::cli
