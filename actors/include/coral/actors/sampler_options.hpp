#pragma once
/// \file
/// Everything a sampler is built from (the sampler flags `coral train` and
/// `coral bench` share), and the wiring they resolve to.

#include <chrono>
#include <cstddef>
#include <cstdint>
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
[[nodiscard]] wiring resolve_wiring(const sampler_options& options);

}  // namespace coral::actors
