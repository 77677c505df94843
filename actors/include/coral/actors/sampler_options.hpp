#pragma once
/// \file
/// Everything a sampler is built from (the sampler flags `coral train` and
/// `coral bench` share), and the wiring they resolve to.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "coral/actors/env_error_policy.hpp"
#include "coral/actors/topology.hpp"
#include "coral/core/executor.hpp"
#include "coral/envs/config.hpp"

namespace coral::actors {

/// Everything a sampler is built from (the flags of `coral bench`).
struct sampler_options {
  std::string env = "cartpole";
  envs::config_args env_args;
  std::uint64_t seed = 0;
  topology topo = topology::pool;
  std::size_t num_envs = 8;
  /// Envs per batch; 0 picks the topology's default (all, half, or a quarter
  /// for pool, rounded to whole groups).
  std::size_t batch_size = 0;
  /// Dynamic batching: once at least this many envs are in hand, wait at
  /// most batch_timeout for the rest. 0 = always wait for a full batch.
  std::size_t min_batch_size = 0;
  std::chrono::microseconds batch_timeout{0};
  /// Envs one actor steps back to back per message; 0 = auto: chosen by
  /// resolve_group_size() from the env's measured step time (see there).
  std::size_t envs_per_group = 0;
  std::size_t threads = 1;
  bool pin = false;
  /// How long idle sampling threads poll before blocking (see pool_options::spin).
  std::chrono::microseconds spin{50};
  /// Run the batcher on a thread of its own (pool `inference`) rather than
  /// on the sampling threads. Worth it when the policy is real work, and for
  /// dynamic batching (its timeout fires on time only on an idle thread).
  bool inference_thread = false;
  executor_mode executor = executor_mode::threads;
  env_error_policy on_env_error = env_error_policy::fail;
  /// A NaN or infinite reward or observation is a failure of the env that
  /// produced it (handled by on_env_error); false (`--allow-non-finite`)
  /// passes such values on.
  bool check_finite = true;
  /// Gymnasium's next-step auto-reset (env_slice::set_next_step_autoreset):
  /// for a vector env's caller; the learners take the default, same-step.
  bool next_step_autoreset = false;
};

/// Checks `options` and resolves its wiring. Throws config_error naming the
/// flag at fault, before anything starts: zero or too many threads, a group
/// size that does not divide the envs, a batch larger than the envs (or than
/// one channel's envs), not a multiple of the group size, double-buffer with
/// an odd number of groups, a sync batch that is not every env, a pool batch
/// that is every env.
///
/// An unresolved auto group size (envs_per_group 0) is checked as groups of
/// one, the size every other choice must be compatible with: the errors it
/// finds hold for any group size.
[[nodiscard]] wiring resolve_wiring(const sampler_options& options);

/// How long one env step takes, measured on a probe env made for the purpose
/// (index num_envs: none of the run's envs, whose streams stay untouched):
/// reset, then random actions for about `budget` (at least one step), on a
/// thread of its own. Returns the mean seconds per step; `patience` if the
/// probe had not finished by then, or by a SIGINT or SIGTERM under a live
/// interrupt_scope (a slow or stalled env, or a stop: the probe thread
/// is left to end on its own, so that an env that never returns cannot hang
/// the start); nullopt if the env failed (the run then meets that failure
/// itself, under its error policy).
[[nodiscard]] std::optional<double> measure_step_seconds(
    const sampler_options& options, std::chrono::microseconds budget = std::chrono::milliseconds(2),
    std::chrono::milliseconds patience = std::chrono::milliseconds(1000));

/// A group's step should take at least this long, so that the per-message
/// cost of a hand-off (a few microseconds of core time, BENCHMARKS.md)
/// stays a few percent of the work it hands off.
inline constexpr double auto_group_seconds = 50e-6;

/// The group size `auto` picks for an env whose step takes `step_seconds`:
/// among the sizes the wiring accepts (dividing --num-envs and the batch,
/// and leaving at least one group per sampling thread, of which the single
/// executor has one), the smallest whose
/// group step reaches auto_group_seconds, or else the largest. The batch
/// size is fixed first (the topology's default for groups of one, when not
/// given), so that it never depends on a measurement. Pure; `options` must
/// pass resolve_wiring.
[[nodiscard]] std::size_t choose_group_size(const sampler_options& options, double step_seconds);

/// `options` with an auto group size (0) replaced by the one chosen for the
/// measured step time (groups of one if the probe env failed), and the
/// batch size made explicit; other options are returned as they are.
/// Throws what resolve_wiring throws.
[[nodiscard]] sampler_options resolve_group_size(sampler_options options);

}  // namespace coral::actors
