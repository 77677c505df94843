#pragma once
/// \file
/// The `coral` command: top-level flags and the registration of every
/// subcommand. Each subcommand lives in its own file (`envs_command.cpp`,
/// later `bench_command.cpp`, `train_command.cpp`) and adds itself to the
/// CLI11 app through an `add_*_command` function declared here.

#include <ostream>

#include <CLI/CLI.hpp>

namespace coral::cli {

/// Parses `argv`, runs the chosen subcommand writing to `out`, and returns
/// the process exit code: 0 on success; CLI11's code for a bad flag (its
/// message, naming the flag, goes to `err`); 1 for a rejected config or
/// value (`error: <what>` on `err`).
///
/// Top-level flags: `--config FILE` (TOML; any flag of any subcommand, see
/// docs/envs.md) and `--log-level LEVEL`.
int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

/// Adds `coral envs` (list envs, spaces and config keys) and
/// `coral envs rollout` (print a trajectory as JSON lines) to `app`.
/// Their output goes to `out`.
void add_envs_command(CLI::App& app, std::ostream& out);

/// Adds `coral bench` (sampling throughput of a topology against the plain
/// for-loop baseline, see shared/DESIGN.md's contract) to `app`.
void add_bench_command(CLI::App& app, std::ostream& out);

/// Adds `coral train` (PPO on any env and topology; progress lines, then one
/// JSON object, see shared/DESIGN.md's contract and docs/training.md) to `app`.
void add_train_command(CLI::App& app, std::ostream& out);

}  // namespace coral::cli
