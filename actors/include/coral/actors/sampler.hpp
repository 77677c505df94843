#pragma once
/// \file
/// A sampler: env groups, ready channels and an inference batcher wired in
/// the topology the options name, plus the plain for-loop baseline.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "coral/actors/env_group.hpp"
#include "coral/actors/inference_batcher.hpp"
#include "coral/actors/policy.hpp"
#include "coral/actors/step_consumer.hpp"
#include "coral/actors/sampler_options.hpp"
#include "coral/channels/channel.hpp"
#include "coral/channels/latest.hpp"
#include "coral/core/actor_graph.hpp"
#include "coral/core/runtime.hpp"
#include "coral/core/stall_watchdog.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/space.hpp"

namespace coral::actors {

/// What a sampler's batchers counted, over every shard; a snapshot.
struct sampler_stats {
  std::uint64_t env_steps = 0;  ///< env steps acted on, all shards
  std::uint64_t batches = 0;    ///< batches, all shards
  std::int64_t run_ns = 0;      ///< the longest shard's time from its first batch to its end
  double idle_fraction = 0;     ///< the batchers' time waiting for envs over their run time, summed over shards
};

/// Owns the batch, the groups, their channels and the batcher (one per
/// shard: see sampler_options::shards).
///
/// Protocol: construct (validates the options and builds every env; throws
/// config_error before anything starts), make a policy for
/// observation_space()/action_space()/rows(), then spawn() onto a runtime and
/// run it. The sampler must outlive the runtime's run().
class sampler {
 public:
  explicit sampler(sampler_options options);
  /// The same, writing into `rows` (rows() × widths of this env's spaces, else
  /// usage_error) rather than a batch of its own: a vector_env restarted
  /// with new envs keeps the rows its caller reads.
  sampler(sampler_options options, std::shared_ptr<envs::env_batch> rows);
  sampler(const sampler&) = delete;
  sampler& operator=(const sampler&) = delete;
  ~sampler();

  /// Spawns the env groups (`env-group-<g>`) and the batcher (`inference-batcher`)
  /// on `rt`'s pool `sampling` (the batcher on pool `inference` with
  /// options().inference_thread), stopping after `max_env_steps` (0 = never).
  /// `pol`, `consumer` and `weights` must outlive the run.
  ///
  /// With several shards, shard s runs on pool `sampling-<s>` (of threads /
  /// shards threads, pinned from core s × that, with pin) and its batcher,
  /// `inference-batcher-<s>`, there or on pool `inference-<s>`. The shards
  /// draw `max_env_steps` from one step_budget, so a shard whose envs step
  /// faster takes more of them and all end together. Throws usage_error,
  /// before anything is spawned, if `pol` does not act concurrently, the
  /// consumer does not consume concurrently, or weights or a gate
  /// (announce_to) are given: each would see several batchers at once.
  void spawn(runtime& rt, policy& pol, std::uint64_t max_env_steps, step_consumer* consumer = nullptr,
             const latest<std::vector<float>>* weights = nullptr);

  /// The same, with the batcher's options given rather than taken from the
  /// sampler's (batch size from wires(); max_env_steps, 0 = never, inside):
  /// every shard's batcher takes them, max_env_steps drawn as above (unless
  /// they hold a budget already).
  void spawn(runtime& rt, policy& pol, const inference_batcher::options& batcher_options,
             step_consumer* consumer = nullptr, const latest<std::vector<float>>* weights = nullptr);

  /// Makes every group announce "ready" to a gate's inbox instead of to
  /// the batcher's ready channels; the gate forwards group g's announcements
  /// to ready_channels()[g % ready_channels().size()] (see gate.hpp). Before
  /// spawn() only. With several shards spawn() then refuses to start.
  void announce_to(channel<gate_msg>& gate_inbox) noexcept;
  /// The channels the batchers take ready groups from: shard s's are
  /// [s × wires().ready_channels, (s + 1) × wires().ready_channels).
  [[nodiscard]] std::vector<channel<ready_msg>*> ready_channels() const;
  /// The batch rows of each group, in group order.
  [[nodiscard]] std::vector<row_range> group_rows() const;
  /// One number per batch row: the row it would be with one shard (env e's
  /// agent j: e × agents + j), and numbers past those for the unused rows
  /// between shards. What a random_policy takes, so that each env draws the
  /// same actions whatever the shard count.
  [[nodiscard]] std::vector<std::uint64_t> row_streams() const;
  /// Env 0 (for its spaces, agents and returns).
  [[nodiscard]] const envs::env& first_env() const noexcept { return groups_.front()->slice().at(0); }

  [[nodiscard]] const sampler_options& options() const noexcept { return options_; }
  [[nodiscard]] const wiring& wires() const noexcept { return wiring_; }
  [[nodiscard]] envs::env_batch& batch() noexcept { return *batch_; }
  /// The batch, shared (to build a later sampler on the same rows).
  [[nodiscard]] std::shared_ptr<envs::env_batch> shared_batch() const noexcept { return batch_; }
  [[nodiscard]] const envs::space& observation_space() const noexcept { return observation_space_; }
  [[nodiscard]] const envs::space& action_space() const noexcept { return action_space_; }
  /// Batch rows: num_envs × agents per env, and with several shards the
  /// unused rows that keep shards off each other's cache lines
  /// (shard_row_alignment; group_rows() says which rows envs use).
  [[nodiscard]] std::size_t rows() const noexcept { return batch_->rows(); }
  /// The batchers' counters, summed over the shards (after spawn(); any
  /// thread, while the run goes on).
  [[nodiscard]] sampler_stats stats() const;
  /// Env failures survived under `--on-env-error reset`, over all groups.
  [[nodiscard]] std::uint64_t env_failures() const noexcept;
  /// Has `watchdog` watch the env steps and describe the sampler (see describe()).
  void watch_by(stall_watchdog& watchdog) const;
  /// Appends one line per env group (steps, where it is) and per ready
  /// channel (depth, parked receivers) and the batcher's counters: the
  /// sampler's part of a stall report. Any thread, while the run goes on.
  void describe(std::string& out) const;
  /// Adds the sampler's part of the live view to `graph` (after spawn()):
  /// each ready channel (its senders: the groups that announce on it, or
  /// `gate` when announce_to() was called), each group's actions channel,
  /// and how busy each group (sampled: in its envs' code) and batcher
  /// (exact: its waits for ready groups) is. The probes read atomics and
  /// channel sizes only; `graph` may read them while the run goes on.
  void chart(actor_graph& graph) const;
  /// The batchers' actor names, in shard order (after spawn()).
  [[nodiscard]] std::vector<std::string> batcher_names() const;
  /// The groups (for tests).
  [[nodiscard]] const std::vector<std::unique_ptr<env_group>>& groups() const noexcept { return groups_; }

 private:
  sampler_options options_;
  wiring wiring_;
  envs::space observation_space_;
  envs::space action_space_;
  std::shared_ptr<envs::env_batch> batch_;
  std::vector<std::unique_ptr<channel<ready_msg>>> ready_;
  env_failure_log logged_env_failures_;  // every group's env_reset lines (max_logged_env_failures)
  std::vector<std::unique_ptr<env_group>> groups_;
  std::vector<std::unique_ptr<inference_batcher>> batchers_;  ///< one per shard, from spawn()
  std::unique_ptr<step_budget> budget_;                       ///< the shards' max_env_steps, from spawn()
  bool gated_ = false;                                        ///< announce_to() was called
};

/// Result of the plain for-loop baseline.
struct loop_result {
  std::uint64_t env_steps = 0;
  double seconds = 0;
};

/// Makes the policy of one plain loop: for `rows` rows, the first of which
/// is row `first_row` of the envs in order (the stream its random draws
/// continue, as sampler::row_streams gives each env's).
using loop_policy_factory = std::function<std::unique_ptr<policy>(std::size_t first_row, std::size_t rows)>;

/// The baseline every sampler is measured against: its envs in plain loops,
/// `for (;;) { act; step_all; }`, with no runtime between the policy and
/// the envs. With one loop, every env on the calling thread in one
/// env_slice. With `loops` > 1, what the machine gives that many threads
/// that share nothing: the envs split into loops of num_envs / loops envs
/// each (loop k has envs [k × that, (k + 1) × that)), side by side, each on
/// a thread of its own (loop 0 on the caller's) with its own batch and the
/// policy `make_policy` gives it, started together. The loops run until one
/// has done its share of `env_steps` (or `stop`, checked between turns,
/// returns true), and the rest stop at the end of their turn, so each ran
/// for the whole measured time: the result is the steps of all over the
/// longest loop's time. Throws usage_error unless `loops` divides
/// num_envs; an exception in a loop stops the others and is rethrown.
[[nodiscard]] loop_result run_plain_loops(const sampler_options& options, std::size_t loops,
                                          const loop_policy_factory& make_policy, std::uint64_t env_steps,
                                          bool (*stop)() noexcept = nullptr);

}  // namespace coral::actors
