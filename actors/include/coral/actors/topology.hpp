#pragma once
/// \file
/// Sampling topologies as wirings (the options they are resolved from: sampler_options.hpp).
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

#include <cstddef>
#include <string_view>

namespace coral::actors {

/// The named topologies.
enum class topology { sync, double_buffer, pool };

/// Parses sync, double-buffer or pool; throws config_error naming `--topology`.
[[nodiscard]] topology parse_topology(std::string_view text);
/// The flag spelling of `t`.
[[nodiscard]] std::string_view to_string(topology t) noexcept;

/// The wiring a set of options resolves to. With several shards (see
/// sampler_options::shards) every shard is wired alike: `ready_channels`
/// and `batch_size` are one shard's, `groups` all of them.
struct wiring {
  std::size_t groups = 0;          ///< num_envs / envs_per_group, over every shard
  std::size_t envs_per_group = 1;  ///< the group size (1 for an unresolved auto)
  std::size_t ready_channels = 1;  ///< per shard; a shard's groups are split evenly across them
  std::size_t batch_size = 0;      ///< envs per batch of one shard's batcher, a multiple of envs_per_group
  std::size_t shards = 1;          ///< independent copies of the wiring (1 for an unresolved auto)
  /// Envs per round of every shard's batch: what `--batch-size` says.
  [[nodiscard]] std::size_t all_shards_batch() const noexcept { return batch_size * shards; }
};

}  // namespace coral::actors
