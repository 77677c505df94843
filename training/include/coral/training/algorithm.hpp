#pragma once
/// \file
/// What an algorithm plugs into a training run (training_run.hpp).
///
/// The composition owns everything a run has whatever it trains: the
/// sampler, the runtime, the gate in front of the batcher, progress lines,
/// metrics files, checkpoint cadence, resume, stop and signal handling, the
/// stall watchdog and the result. An algorithm brings only what is its own:
/// the policy the batcher acts with, the step consumer, the gate policy, its
/// learner actor, its checkpoint state and its metrics columns. A new
/// algorithm is one file with a class like this and a registered
/// descriptor (algorithm_descriptor.hpp); the composition does not change.
///
/// Torch-free: algorithms that train with libtorch keep it in their .cpp.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <asio/awaitable.hpp>

#include "coral/actors/gate.hpp"
#include "coral/actors/policy.hpp"
#include "coral/actors/sampler.hpp"
#include "coral/actors/step_consumer.hpp"
#include "coral/core/actor_graph.hpp"
#include "coral/core/runtime.hpp"
#include "coral/training/checkpoint.hpp"
#include "coral/training/train_options.hpp"
#include "coral/training/training_stats.hpp"

namespace coral::training {

class training_run;

/// Which of the two row streams a row is for: each keeps its own window for
/// rates ("per second since the last row").
enum class row_stream { progress, metrics };

/// The part of an algorithm that runs it across ranks (train_options::remote,
/// docs/distributed.md). On the learner (rank 0) the composition calls the
/// algorithm's start() and spawn() as always but runs no sampling: the
/// samplers' items reach it through accept(). On a sampler rank it runs
/// start() and the sampling side, and no spawn(): the link sends what take()
/// gives to the learner. Each call comes from the link's actor, one at a time.
class distribution_part {
 public:
  virtual ~distribution_part() = default;
  /// On a sampler rank: appends the items ready for the learner (PPO
  /// segments, replay inserts) to `out`, encoded. False when none is ready.
  virtual bool take(std::vector<std::byte>& out) = 0;
  /// On the learner: takes what sampler `index` (its rank − 1) took. False
  /// when it cannot take them yet: the link offers the same bytes again
  /// later, before any newer ones of that sampler. Throws coral::error for
  /// bytes that do not decode (naming the sender and field).
  virtual bool accept(std::size_t index, std::span<const std::byte> in, const std::string& from) = 0;
  /// On the learner: moves what accept() took on, when it could not at once
  /// (called on every round of the link).
  virtual void pump() {}
  /// On the learner: what sampler `index` must be told now (DQN: its share
  /// of the insert allowance), encoded into `out`. False when nothing changed.
  virtual bool control(std::size_t index, std::vector<std::byte>& out) {
    (void)index, (void)out;
    return false;
  }
  /// On a sampler rank: applies what control() encoded.
  virtual void apply_control(std::span<const std::byte> in, const std::string& from) { (void)in, (void)from; }
  /// On the learner: sampler `index`'s part of a progress line (e.g. its policy lag), or empty.
  [[nodiscard]] virtual std::string rank_row(std::size_t index) const {
    (void)index;
    return {};
  }

 protected:
  distribution_part() = default;
  distribution_part(const distribution_part&) = default;
  distribution_part& operator=(const distribution_part&) = default;
};

/// One algorithm in a training run. The composition calls, in order: the
/// factory (the sampler is built), signature(), restore() when resuming,
/// start(), then policy(), consumer(), gate_policy(), spawn(); while the run
/// goes on, row() (any thread: the progress actor and the learner both
/// make rows, one at a time), snapshot() (from the learner, through
/// training_run::updated()), describe() (the stall watchdog); after the
/// run, finish(), row(), final_state(), updates().
class algorithm {
 public:
  virtual ~algorithm() = default;

  /// The signature of its network layout, written into checkpoints and
  /// checked when resuming.
  [[nodiscard]] virtual std::string signature() const = 0;
  /// Continues from `c`, which is a checkpoint of the same run (env, algo,
  /// signature and seed were checked). Returns what it restored beyond the
  /// counters, for the "resumed from" line (e.g. "5000 transitions in
  /// replay"), or an empty text. Throws config_error when the checkpoint's
  /// replay does not fit this run's (another capacity, stream count or
  /// sequence shape); training_run names the checkpoint and the replay flags.
  virtual std::string restore(const checkpoint& c) = 0;

  /// Builds the acting side and the learner for `run`, which starts at
  /// run.start_steps(): publishes the initial weights to run.weights().
  virtual void start(training_run& run) = 0;
  /// What the batcher acts with (valid after start()).
  [[nodiscard]] virtual actors::policy& policy() = 0;
  /// What the batcher hands each step to (valid after start()).
  [[nodiscard]] virtual actors::step_consumer& consumer() = 0;
  /// What the gate asks whether a group may step (valid after start()).
  [[nodiscard]] virtual actors::gate_policy& gate_policy() = 0;
  /// Spawns its learner actor (and any actor of its own) on `rt`. The
  /// learner calls run.publish(), run.tell_gate() and run.updated().
  virtual void spawn(runtime& rt, training_run& run) = 0;
  /// Closes the channels its actors wait on (the run is stopping; any thread).
  virtual void close() noexcept = 0;
  /// After the runtime ran: settles what was still in flight.
  virtual void finish() {}

  /// Its part of the first line, after the sampler's (e.g. "horizon 64, ...").
  [[nodiscard]] virtual std::string describe_setup() const = 0;
  /// Its metrics columns, comma-separated (the composition adds seconds,
  /// env_steps, steps_per_second, episodes, mean_return and mean_length
  /// before them and updates after).
  [[nodiscard]] virtual std::string_view columns() const = 0;
  /// Its part of a row on `stream`, with the statistics `s`, `seconds` after
  /// the stream's previous row: for a progress line, the text shown between
  /// the episode figures and the update count; for a metrics row, its
  /// columns' values, comma-separated, in columns() order.
  [[nodiscard]] virtual std::string row(row_stream stream, const stats_snapshot& s, double seconds) = 0;
  /// Env steps between metrics rows (a row is written after the first
  /// update past each multiple); 1: after every update.
  [[nodiscard]] virtual std::uint64_t metrics_every() const { return 1; }
  /// Appends its queues to a stall report.
  virtual void describe(std::string& out) { (void)out; }
  /// Adds its part of the live view to `graph` (after spawn(), before the
  /// run; see actor_graph): the channels between its actors and the
  /// batcher (its step consumer runs inside the batcher's actor), how busy
  /// its actors are (its learner: run.activity().busy()), and its figures
  /// (policy_lag, replay_ratio, ...). Its probes are read from the live
  /// view's thread while the run goes on. Nothing by default: its actors
  /// are still listed, with no channels and no busy fraction.
  virtual void chart(actor_graph& graph, training_run& run) {
    (void)graph;
    (void)run;
  }

  /// Fills `c` (whose env, network, seed and algo are set) with its state,
  /// on the learner's actor during the run. False when the run is stopping
  /// and the state could not be taken (the final checkpoint follows).
  [[nodiscard]] virtual asio::awaitable<bool> snapshot(checkpoint& c) = 0;
  /// The same after the run, when no actor runs.
  virtual void final_state(checkpoint& c) = 0;
  /// Updates done, a resumed run's included.
  [[nodiscard]] virtual std::uint64_t updates() const = 0;

  // Distribution (optional).

  /// Its distributed form, or null when it runs in one process only (a run
  /// with --distributed refuses it). The algorithm keeps ownership.
  [[nodiscard]] virtual distribution_part* distribution() { return nullptr; }

 protected:
  algorithm() = default;
  algorithm(const algorithm&) = default;
  algorithm& operator=(const algorithm&) = default;
};

/// Builds an algorithm for a run of `options` over `sampler` (whose envs
/// are built, not yet running). Throws config_error for envs it cannot train.
using algorithm_factory = std::function<std::unique_ptr<algorithm>(const train_options&, actors::sampler&)>;

}  // namespace coral::training
