#pragma once
/// \file
/// Error texts of the actors layer (fmt format strings); tests assert them exactly.

#include <string_view>

namespace coral::actors::errors {

/// A flag whose value is out of range on its own: flag, value, what is required.
inline constexpr std::string_view flag_out_of_range = "{}: {} is invalid: {}";
/// An env threw and the policy is fail: env index (global), group name, what.
inline constexpr std::string_view env_failed = "env {} in group '{}' failed: {}";
/// An env threw and the policy is reset: env index, group name, that env's failures so far, what.
inline constexpr std::string_view env_reset = "env {} in group '{}' failed and was reset (its failure {}): {}";
/// The last env failure a run logs (errors::env_reset lines are limited to
/// this many a run): the limit.
inline constexpr std::string_view env_failures_unlogged =
    "{} env failures logged; later ones are counted, not logged (env_failures in the final line)";
/// Building the run's envs failed: env, how many were built, how many the run has, what failed.
inline constexpr std::string_view envs_not_built = "env '{}': {} of {} envs built, then building the next failed: {}";
/// With `--on-env-error reset`, the reset after a failure threw too: env index, group name, what.
inline constexpr std::string_view env_unrecoverable = "env {} in group '{}' failed and could not be reset: {}";

/// A run whose estimate exceeds the available memory: flag, its value, the
/// estimate, its largest parts, the available memory (figures like `24.0 GiB`).
inline constexpr std::string_view memory_over_budget =
    "{}: {} needs {} of memory ({}) but this machine has {} available";
/// CORAL_MEMORY_AVAILABLE set to something that is not a size: the value.
inline constexpr std::string_view bad_memory_override =
    "CORAL_MEMORY_AVAILABLE: invalid value '{}' (allowed: a size in bytes, or with a KiB, MiB or GiB suffix)";

/// receive() before start() or after close().
inline constexpr std::string_view vector_env_not_running = "vector env: not running (reset it first, or it was closed)";
/// receive() with a batch in hand.
inline constexpr std::string_view vector_env_holding =
    "vector env: a batch is in hand; send its actions before receiving the next";
/// receive() or send() after close() (perhaps from another thread), before
/// the next start().
inline constexpr std::string_view vector_env_closed =
    "vector env: closed (by close(), perhaps from another thread); start it again first";
/// send() with no batch in hand.
inline constexpr std::string_view vector_env_not_holding = "vector env: no batch in hand; receive one first";
/// send() with autoreset_mode::disabled, stepping an env whose episode
/// ended without resetting it: env id.
inline constexpr std::string_view vector_env_step_after_end =
    "vector env: env {} ended its episode and autoreset is disabled; reset it (a reset command, or "
    "reset(options={{'reset_mask': mask}}) from Python) before stepping it";
/// render() of an env that is not in the batch in hand (it may be stepping): env id.
inline constexpr std::string_view vector_env_render_not_held =
    "vector env: env {} is not in the batch in hand; render it while it is (between receive and send)";

}  // namespace coral::actors::errors
