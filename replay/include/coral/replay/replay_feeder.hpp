#pragma once
/// \file
/// `replay_feeder`: the sampling side of replay. It turns the steps the
/// inference batcher produces into n-step transitions for the replay actor,
/// and holds env groups back while the replay's rate limiter says the
/// learner is behind.
///
/// Like the rollout assembler it is two things at once:
///
/// - the batcher's step_consumer: consume() sees, for every row it acted on,
///   the outcome of the row's previous step (reward, terminated, truncated,
///   final observation) and the observation and action of the new one. It
///   completes the previous step's (o, a, r, o') through the row's
///   nstep_assembler (one replay stream per row) and sends what that emits to
///   the replay actor as one insert_block per batch, together with the
///   number of env steps the batch accounts for. A row whose env was reset
///   after a failure (its step left no episode length) has its pending
///   steps dropped and its stream cut, so no transition spans the reset;
/// - an actor (run()) between the env groups and the batcher: groups
///   announce ready to ready(); it forwards an announcement to the batcher
///   once the replay's insert allowance covers the group's steps, and
///   otherwise waits for the replay actor's wake-up note. Nothing is
///   dropped: a held group simply does not step.
///
/// It ends the run (on_finish, once) when max_env_steps env steps were
/// forwarded, or when on_episode asked to stop (a solved run).
///
/// Thread safety: run() is one actor; consume() is called by the batcher,
/// possibly on another thread, and touches only its own per-row state and
/// the atomics; close() may be called from any thread.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <asio/awaitable.hpp>

#include "coral/actors/env_group.hpp"
#include "coral/actors/inference_batcher.hpp"
#include "coral/actors/policy.hpp"
#include "coral/actors/step_consumer.hpp"
#include "coral/actors/topology.hpp"
#include "coral/channels/channel.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/replay/nstep_assembler.hpp"
#include "coral/replay/replay_actor.hpp"

namespace coral::replay {

/// The most env steps that an inference_batcher with `options`, over
/// `wiring` with groups of `envs_per_group`, can keep without acting: it
/// takes its ready channels in turn and waits on one until it has a batch
/// (with dynamic batching, min_batch_size once the timeout passed), so it
/// may sit on one group short of that on its channel while every other
/// channel holds all of its groups. 0 when it acts on every group at once.
/// The replay actor's batcher_hold.
[[nodiscard]] std::size_t batcher_hold(const actors::wiring& wiring, const actors::inference_batcher::options& options,
                                       std::size_t envs_per_group);

/// Why the feeder ended the run.
enum class feed_end {
  stop_requested,  ///< on_episode returned true (e.g. the target return was reached)
  step_limit,      ///< max_env_steps env steps were forwarded
};

/// The sampling side of replay.
class replay_feeder final : public actors::step_consumer {
 public:
  /// The group id of the replay actor's wake-up note.
  static constexpr std::uint32_t wake_note = 0xFFFFFFFEU;

  /// Called for every finished episode with its return and length; returns
  /// true to end the run. Runs on the batcher's executor.
  using episode_callback = std::function<bool(double episode_return, double episode_length)>;

  /// What the feeder is built with.
  struct options {
    std::size_t n_step = 3;            ///< steps summed into one transition
    double gamma = 0.99;               ///< discount of the n-step return
    std::uint64_t env_steps = 0;       ///< env steps already run (a resumed run)
    std::uint64_t max_env_steps = 0;   ///< stop once this many were forwarded; 0 = never
  };

  /// `group_rows[g]` are the batch rows of group g. The replay's streams
  /// are the batch rows (its num_streams must be batch.rows()). Registers
  /// itself as the replay's waker.
  replay_feeder(envs::env_batch& batch, std::vector<actors::row_range> group_rows, replay_actor& replay,
                episode_callback on_episode, options opts);

  /// Where groups announce ready (and the replay actor its wake-ups).
  [[nodiscard]] channel<actors::ready_msg>& ready() noexcept { return ready_; }

  /// The actor's body: forwards group g to `batcher_ready[g % size]`. Ends
  /// when ready() is closed, a forward fails, or it finished.
  [[nodiscard]] asio::awaitable<void> run(std::vector<channel<actors::ready_msg>*> batcher_ready,
                                          std::function<void(feed_end)> on_finish);

  /// Builds the transitions of the rows in `step` and sends them to the replay actor.
  void consume(const actors::step_batch& step) override;

  /// Closes ready().
  void close() noexcept { ready_.close(); }

  /// Env steps forwarded to the batcher so far (resumed ones included).
  [[nodiscard]] std::uint64_t env_steps() const noexcept { return env_steps_.load(std::memory_order_relaxed); }
  /// Groups held back by the rate limiter right now.
  [[nodiscard]] std::size_t held_groups() const noexcept { return held_count_.load(std::memory_order_relaxed); }

 private:
  std::unique_ptr<insert_block> take_block();

  envs::env_batch* batch_;
  std::vector<actors::row_range> group_rows_;
  replay_actor* replay_;
  episode_callback on_episode_;
  options options_;
  channel<actors::ready_msg> ready_;
  // Per row: the assembler and the step waiting for its outcome.
  std::vector<nstep_assembler> assemblers_;
  std::vector<float> previous_obs_;
  std::vector<std::int32_t> previous_discrete_;
  std::vector<float> previous_continuous_;
  std::vector<std::uint8_t> has_previous_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> env_steps_;
  std::atomic<std::size_t> held_count_{0};
  std::uint64_t forwarded_;  // env steps forwarded, in the replay limiter's count
};

}  // namespace coral::replay
