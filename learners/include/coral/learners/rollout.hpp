#pragma once
/// \file
/// Rollout assembly: env steps collected per row into fixed-length segments
/// (horizon T) with the policy version of every step, handed to the learner;
/// and the gate that bounds policy lag by holding env groups back.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <asio/awaitable.hpp>

#include "coral/actors/env_group.hpp"
#include "coral/actors/inference_batcher.hpp"
#include "coral/actors/topology.hpp"
#include "coral/actors/policy.hpp"
#include "coral/actors/step_consumer.hpp"
#include "coral/channels/channel.hpp"
#include "coral/channels/latest.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/learners/frame_stack.hpp"
#include "coral/learners/training_stats.hpp"

namespace coral::learners {

/// T steps of every batch row, as the learner trains on them. Arrays are
/// row-major by (row, step): element (r, t) is at r × horizon + t.
struct rollout_segment {
  std::uint64_t index = 0;          ///< 0, 1, 2, ... per run
  std::size_t rows = 0;
  std::size_t horizon = 0;
  std::size_t obs_dim = 0;          ///< width of an (stacked) observation row
  std::size_t discrete_dim = 0;
  std::size_t continuous_dim = 0;
  /// rows × (horizon + 1) × obs_dim: the observation each action was chosen
  /// from; step `horizon` is the observation after the last step (bootstrap).
  std::vector<float> observations;
  std::vector<std::int32_t> discrete_actions;  ///< rows × horizon × discrete_dim
  std::vector<float> continuous_actions;       ///< rows × horizon × continuous_dim
  std::vector<float> log_probs;                ///< rows × horizon, of the acting policy
  std::vector<float> values;                   ///< rows × horizon, of the acting policy
  std::vector<float> rewards;                  ///< rows × horizon
  std::vector<std::uint8_t> terminated;        ///< rows × horizon
  std::vector<std::uint8_t> truncated;         ///< rows × horizon
  std::vector<std::uint64_t> policy_versions;  ///< rows × horizon: version that chose the action
  /// Steps (r × horizon + t) that were truncated and not terminated, and
  /// their final observations (stacked), for bootstrapping V(final).
  std::vector<std::uint32_t> truncated_steps;
  std::vector<float> truncated_observations;

  /// Sized for rows × horizon steps.
  rollout_segment(std::uint64_t index, std::size_t rows, std::size_t horizon, std::size_t obs_dim,
                  std::size_t discrete_dim, std::size_t continuous_dim);
  /// An empty segment (for channel slots).
  rollout_segment() = default;
  /// Env steps it holds.
  [[nodiscard]] std::uint64_t env_steps() const noexcept { return rows * horizon; }
};

/// Why the assembler stopped the run.
enum class finish_reason {
  solved,      ///< the mean return of the last 100 episodes reached the target
  step_limit,  ///< max_env_steps env steps were acted on
};

/// Assembles segments and gates the sampler. It is two things at once:
///
/// - an actor (run()) standing between the env groups and the inference
///   batcher: groups announce `ready` to ready(); the assembler records what
///   the step left in the group's rows (reward, flags, final observation,
///   episode totals, next observation), then forwards the announcement to
///   the batcher, unless that group's next step starts segment k and the
///   newest published weights are older than base + k − max_policy_lag
///   (base = the version published before sampling). A held group is
///   forwarded as soon as the learner announces new weights. With lag 0 every
///   step of segment k is acted on by exactly version base + k: strictly
///   on-policy, and the sampler waits while the learner updates;
/// - the step_consumer of the batcher: consume() records the action, log
///   probability, value and policy version the batcher just produced.
///
/// When every row has T steps of segment k with their outcomes, the segment
/// goes to segments() (capacity max_policy_lag + 2: the gate makes sure it is
/// never full). The learner, after publishing new weights, sends
/// `ready_msg{published}` to ready() so that held groups move on.
///
/// It ends the run (calls on_finish once, and stops forwarding) when the
/// mean return of the last 100 episodes reaches the target, or when
/// max_env_steps env steps were acted on.
///
/// Thread safety: run() is one actor; consume() is called by the batcher,
/// possibly on another thread: each row is written by one side at a time
/// (the ready/actions hand-over orders them) and the table of open segments
/// is guarded by a mutex. close() may be called from any thread.
class rollout_assembler final : public actors::step_consumer {
 public:
  /// The group id of the learner's "new weights were published" note.
  static constexpr std::uint32_t published = 0xFFFFFFFFU;

  /// What the assembler is built with.
  struct options {
    std::size_t horizon = 128;         ///< steps per row per segment (T)
    std::size_t max_policy_lag = 0;    ///< updates the acting weights may lag the learner by
    std::size_t frames = 1;            ///< observations stacked into a segment's rows
    std::uint64_t env_steps = 0;       ///< already counted (a resumed run)
    std::uint64_t max_env_steps = 0;   ///< stop once this many were acted on; 0 = never
    std::optional<double> target_return;  ///< stop once the last-100 mean reaches it
  };

  /// `group_rows[g]` are the batch rows of group g (all groups the same size).
  rollout_assembler(envs::env_batch& batch, std::vector<actors::row_range> group_rows,
                    const latest<std::vector<float>>& weights, training_stats& stats, options opts);

  /// Where groups announce ready, and the learner its new weights.
  [[nodiscard]] channel<actors::ready_msg>& ready() noexcept { return ready_; }
  /// Completed segments, in order.
  [[nodiscard]] channel<std::unique_ptr<rollout_segment>>& segments() noexcept { return segments_; }

  /// The actor's body: forwards to `batcher_ready[g % size]`. Ends when
  /// ready() is closed, a forward fails (the batcher closed), or it finished.
  [[nodiscard]] asio::awaitable<void> run(std::vector<channel<actors::ready_msg>*> batcher_ready,
                                          std::function<void(finish_reason)> on_finish);

  /// Records the action, log probability, value and policy version of each
  /// row in `step` (the batcher calls it after acting).
  void consume(const actors::step_batch& step) override;

  /// Closes ready() and segments().
  void close() noexcept;

  /// Env steps acted on so far (forwarded to the batcher).
  [[nodiscard]] std::uint64_t env_steps() const noexcept { return env_steps_; }

 private:
  rollout_segment& segment(std::uint64_t k);  // creates it; caller holds mutex_
  /// Writes the outcome of row r's step (slot i of `seg`) from the batch;
  /// records an ended episode. Caller holds mutex_.
  void record_outcome(rollout_segment& seg, std::size_t i, std::uint32_t r);
  /// Records step n − 1's outcome and observation n of group g; moves
  /// completed segments to `done`.
  void record_ready(std::uint32_t g, std::uint64_t n, std::vector<std::unique_ptr<rollout_segment>>& done);
  [[nodiscard]] bool may_forward(std::uint64_t n) const;

  envs::env_batch* batch_;
  std::vector<actors::row_range> group_rows_;
  const latest<std::vector<float>>* weights_;
  training_stats* stats_;
  options options_;
  std::uint64_t base_version_;
  std::size_t rows_per_group_;
  channel<actors::ready_msg> ready_;
  channel<std::unique_ptr<rollout_segment>> segments_;
  frame_stack frames_;                  // the gate's side
  std::vector<std::uint64_t> readies_;  // per group: readies received
  std::vector<std::uint64_t> acted_;    // per group: batches consumed
  std::mutex mutex_;                    // guards open_
  std::map<std::uint64_t, std::unique_ptr<rollout_segment>> open_;
  std::map<std::uint64_t, std::size_t> groups_done_;
  std::uint64_t env_steps_;
  bool solved_ = false;
  std::vector<float> scratch_;
};

/// The batcher options for a sampler gated by a rollout_assembler.
///
/// A batch smaller than the groups of its ready channel (the pool topology)
/// needs dynamic batching behind the gate: at a segment boundary the last
/// groups of the segment may be fewer than a batch while the others are held
/// for new weights, and a batcher waiting for a full batch would wait for
/// ever. Unless the options set min_batch_size, this sets it to one group,
/// with a timeout of `threads_timeout` (threads mode) or 0 (single mode: act
/// on what is buffered, which keeps the run deterministic).
[[nodiscard]] actors::inference_batcher::options gated_batcher_options(
    const actors::sampler_options& options, const actors::wiring& w,
    std::chrono::microseconds threads_timeout = std::chrono::microseconds(200));

}  // namespace coral::learners
