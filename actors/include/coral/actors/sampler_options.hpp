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

/// The `spin` of sampler_options that asks resolve_auto() to choose it.
inline constexpr std::chrono::microseconds spin_auto{-1};
/// The `shards` of sampler_options that asks resolve_auto() to choose it.
inline constexpr std::size_t shards_auto = 0;
/// With several shards, each shard's first batch row is a multiple of this
/// (rows between shards stay unused): every batch column is aligned to a
/// 64-byte cache line and the narrowest holds a byte per row, so no cache
/// line holds two shards' rows. Without it two shards of noop write the
/// same flag lines on every step and sample no faster than one.
inline constexpr std::size_t shard_row_alignment = 64;

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
  /// resolve_auto() from the env's measured step time (see there).
  std::size_t envs_per_group = 0;
  std::size_t threads = 1;
  /// Independent copies of the wiring, each with its own ready channels,
  /// batcher and threads: shard s gets envs [s·n/S, (s+1)·n/S), a batch of
  /// batch_size / S and threads / S threads of its own (pool
  /// `sampling-<s>`), and its batcher acts on those rows only, so no
  /// hand-off crosses from one shard's threads to another's. More than one
  /// needs a policy that may act on disjoint rows from several threads at
  /// once (policy::acts_concurrently), a step consumer likewise, or none,
  /// and no weights and no gate (sampler::spawn checks). shards_auto:
  /// chosen by resolve_auto() (see choose_shards).
  std::size_t shards = 1;
  bool pin = false;
  /// How long idle sampling threads poll before blocking (see
  /// pool_options::spin); spin_auto: chosen by resolve_auto() from the env's
  /// measured step time (see choose_spin).
  std::chrono::microseconds spin = spin_auto;
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
  /// False: an env whose episode ended is not reset by its group; it waits,
  /// ended, for the caller's reset command (env_slice::set_autoreset,
  /// Gymnasium's DISABLED). For a vector env's caller only.
  bool autoreset = true;
};

/// Checks `options` and resolves its wiring (with shards, one shard's: see
/// wiring). Throws config_error naming the
/// flag at fault, before anything starts: zero or too many threads, a group
/// size that does not divide the envs, a batch larger than the envs (or than
/// one channel's envs), not a multiple of the group size, double-buffer with
/// an odd number of groups, a sync batch that is not every env, a pool batch
/// that is every env; a shard count that does not divide --threads, the
/// groups, the batch in whole groups, or --min-batch-size.
///
/// An unresolved auto group size (envs_per_group 0) is checked as groups of
/// one, the size every other choice must be compatible with: the errors it
/// finds hold for any group size.
[[nodiscard]] wiring resolve_wiring(const sampler_options& options);

/// How long one env step takes, measured on a probe env made for the purpose
/// (index num_envs: none of the run's envs, whose streams stay untouched):
/// reset, then random actions for about `budget` in three rounds (at least
/// one step each), on a thread of its own. Returns the fastest round's mean
/// seconds per step (one preemption slows one round); `patience` if the
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

/// The spin an idle thread of a sampling pool of `threads` threads gets when
/// a group's step (envs per group times an env step) takes
/// `group_step_seconds`: none with two threads or more below
/// auto_spin_below_seconds, where the envs cost less than a hand-off from
/// one core to another and a spinning thread does harm (it takes a
/// coroutine and its batch across cores as soon as one is queued, where the
/// thread that queued it would have run it next: BENCHMARKS.md, "Spin at
/// the defaults"); otherwise auto_spin (a wake-up of about a microsecond
/// instead of an OS round trip of tens). A lone thread has no other to take
/// its work, so spinning only spares it the slow wake-ups from the learner
/// and the gates.
[[nodiscard]] std::chrono::microseconds choose_spin(double group_step_seconds, std::size_t threads);

/// Below this group step time, auto spin is none (see choose_spin).
inline constexpr double auto_spin_below_seconds = 0.5e-6;
/// The spin auto gives above auto_spin_below_seconds, and whenever the probe
/// env failed (the spin of every release before auto).
inline constexpr std::chrono::microseconds auto_spin{50};

/// One shard of `options` as a sampler of its own: its share of the envs,
/// the batch, the minimum batch and the threads, and shards 1. `options`
/// must have its shard count resolved and its batch size given (both of
/// all shards); resolve_wiring checks that they split evenly.
[[nodiscard]] sampler_options one_shard(sampler_options options);

/// The shard count auto picks: one shard per sampling thread where the
/// wiring allows it (the threads executor, and the threads, groups of one
/// and batch split evenly, each shard a valid wiring of its own), else the
/// largest divisor of --threads that does; one with inference_thread (one
/// batcher thread asked for: each shard would have its own). Pure;
/// `options` must pass resolve_wiring with shards 1.
[[nodiscard]] std::size_t choose_shards(const sampler_options& options);

/// `options` with its auto settings made explicit: an auto shard count
/// replaced by choose_shards', for light and heavy envs alike (heavy ones'
/// figures: BENCHMARKS.md, "Issue 15's targets on the Zen 4 host"), before
/// the group size, which is then chosen for one shard's envs, batch and
/// threads; an auto group size (0) replaced by the one chosen for the
/// measured step time (groups of one if the probe env failed), the batch
/// size filled in; and an auto spin replaced by choose_spin's for the
/// resolved group size (auto_spin if the probe failed), for one shard's
/// threads. The env is probed (measure_step_seconds) only when the group
/// size or the spin is auto. Other options are returned as they are.
/// Throws what resolve_wiring throws.
[[nodiscard]] sampler_options resolve_auto(sampler_options options);

}  // namespace coral::actors
