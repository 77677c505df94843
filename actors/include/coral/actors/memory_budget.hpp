#pragma once
/// \file
/// What a run will allocate, estimated before anything is allocated, and the
/// check that refuses a run that cannot fit in this machine's memory.
///
/// An estimate is a list of parts (env batch slabs, envs and their groups,
/// rollout storage, replay, network...), each in bytes, computed in double
/// precision so that absurd flag values (`--num-envs 1e18`) cannot overflow
/// size arithmetic. It counts the large, size-dependent allocations only, so
/// it is a lower bound of what the run needs: a refused run could never have
/// fitted. The sampler's part lives here (torch-free, for `coral bench`);
/// `coral train` adds its learner's parts (training/src/memory_budget.cpp, with each algorithm descriptor's estimate).

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "coral/actors/errors.hpp"
#include "coral/actors/sampler_options.hpp"
#include "coral/envs/space.hpp"

namespace coral::actors {

/// One part of a run's memory.
struct memory_part {
  std::string what;  ///< e.g. `env batch slabs`
  double bytes = 0;
};

/// The parts of a run's memory, in bytes.
class memory_estimate {
 public:
  /// Adds a part (parts of zero bytes are dropped).
  void add(std::string what, double bytes);
  /// Every part added, in order.
  [[nodiscard]] const std::vector<memory_part>& parts() const noexcept { return parts_; }
  /// The sum of the parts.
  [[nodiscard]] double total() const noexcept;
  /// The largest parts with their sizes, largest first: `envs 22.4 GiB, env batch slabs 4.8 GiB`.
  [[nodiscard]] std::string largest_parts(std::size_t at_most = 3) const;

 private:
  std::vector<memory_part> parts_;
};

/// The sizes of an env's spaces that the estimate needs.
struct env_shape {
  std::size_t obs_dim = 0;            ///< floats per observation row
  std::vector<std::size_t> obs_shape; ///< the observation Box's shape; empty for another space
  std::size_t discrete_action_dim = 0;
  std::size_t continuous_action_dim = 0;
  std::size_t action_choices = 0;     ///< the sum of every Discrete/MultiDiscrete component's choices (logits)
  std::size_t action_mask_bytes = 0;  ///< action mask per row (envs::env::action_mask_size(); 0: no mask)
  std::size_t agents = 1;             ///< rows per env
  std::size_t heap_bytes = 0;         ///< what one env holds on the heap (envs::env::heap_bytes)
};

/// The shape of env `options.env` with `options.env_args`: builds one env
/// (env index 0) to read its spaces. Throws what the registry throws for an
/// unknown env or a bad config.
[[nodiscard]] env_shape probe_env_shape(const sampler_options& options);

/// Adds the sampler's parts for `options` and an env of `shape`: the env
/// batch slabs (every row's observation, final observation, actions, reward,
/// flags and episode totals), the envs and their group actors (per env and
/// per group figures measured on cartpole, rounded down, plus what the env
/// itself reports it holds: a MuJoCo env's mjData).
void add_sampler_memory(memory_estimate& estimate, const sampler_options& options, const env_shape& shape);

/// Bytes this process may still allocate: MemAvailable from /proc/meminfo
/// (physical memory when it is missing), lowered to what the process's
/// cgroup (v2) limit leaves. The environment variable CORAL_MEMORY_AVAILABLE
/// (bytes, or with a KiB/MiB/GiB suffix) replaces the figure; a bad value
/// throws config_error (errors::bad_memory_override).
[[nodiscard]] double available_memory();

/// A byte count as people read it: `512 B`, `3.5 KiB`, `24.0 MiB`, `1.2 GiB`, `3.0 TiB`.
[[nodiscard]] std::string format_bytes(double bytes);

/// A flag that sizes the run: its name, its value as typed, and the
/// estimate of the run with that flag at its default.
struct sizing_flag {
  std::string flag;   ///< e.g. `--num-envs`
  std::string value;  ///< e.g. `100000000`
  double total_at_default = 0;
};

/// Throws config_error (errors::memory_over_budget) when `estimate`
/// exceeds `available` bytes, naming the flag among `flags` whose reset to
/// its default saves the most memory (the first one when none saves any).
/// Does nothing when `flags` is empty or the estimate fits.
void check_memory(const memory_estimate& estimate, const std::vector<sizing_flag>& flags, double available);

}  // namespace coral::actors
