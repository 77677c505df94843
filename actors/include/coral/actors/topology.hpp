#pragma once
/// \file
/// Sampling topologies as wirings, and the options of a sampler.
///
/// A wiring is two numbers: how many ready channels the env groups are split
/// across, and how many envs the batcher takes per batch. The batcher has one
/// loop for all of them (take the next channel in turn, receive ready groups
/// until the batch is full, act, send actions back):
///
/// | topology      | ready channels | batch size     | effect                                   |
/// |---------------|----------------|----------------|------------------------------------------|
/// | sync          | 1              | num_envs       | lockstep; deterministic at any thread count |
/// | double-buffer | 2              | num_envs / 2   | policy runs on one half while the other steps |
/// | pool          | 1              | < num_envs     | the first groups to finish form the batch |
///
/// Any other (channels, batch size) with batch size a multiple of the group
/// size and at most the envs of one channel works the same way.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "coral/core/executor.hpp"
#include "coral/envs/config.hpp"

namespace coral::actors {

/// The named topologies.
enum class topology { sync, double_buffer, pool };

/// Parses sync, double-buffer or pool; throws config_error naming `--topology`.
[[nodiscard]] topology parse_topology(std::string_view text);
/// The flag spelling of `t`.
[[nodiscard]] std::string_view to_string(topology t) noexcept;

/// What an env group does when one of its envs throws.
enum class env_error_policy {
  fail,   ///< stop the run: the group's actor fails naming the env
  reset,  ///< log it, count it, reset that env and go on
};

/// Parses fail or reset; throws config_error naming `--on-env-error`.
[[nodiscard]] env_error_policy parse_env_error_policy(std::string_view text);

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
  std::size_t envs_per_group = 1;
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
};

/// The wiring a set of options resolves to.
struct wiring {
  std::size_t groups = 0;          ///< num_envs / envs_per_group
  std::size_t ready_channels = 1;  ///< groups are split evenly across them
  std::size_t batch_size = 0;      ///< envs per batch, a multiple of envs_per_group
};

/// Checks `options` and resolves its wiring. Throws config_error naming the
/// flag at fault, before anything starts: zero or too many threads, a group
/// size that does not divide the envs, a batch larger than the envs (or than
/// one channel's envs), not a multiple of the group size, double-buffer with
/// an odd number of groups, a sync batch that is not every env, a pool batch
/// that is every env.
[[nodiscard]] wiring resolve_wiring(const sampler_options& options);

}  // namespace coral::actors
