#pragma once
/// \file
/// The one training composition: every `coral train` run, whatever the
/// algorithm, is this wiring (docs/architecture.md draws it):
///
///     env groups ──ready──▶ gate ──ready──▶ inference batcher ──actions──▶ env groups
///                            ▲  (gate policy)        │ step_consumer::consume()
///                            │                       ▼
///                     notes (weights            algorithm's consumer ──▶ learner actor
///                     published, allowance                               (and its own actors)
///                     raised)                                                 │
///                            └────────────────────────────────────────────────┘
///
/// training_run owns the sampler, the runtime, the gate, progress lines,
/// metrics.csv, checkpoint cadence and resume, stop and signal handling, the
/// stall watchdog and the result; the algorithm (algorithm.hpp) plugs in
/// its policy, step consumer, gate policy, learner, checkpoint state and
/// metrics columns.
///
/// Torch-free, so that the sanitizer builds run it with test algorithms.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <asio/awaitable.hpp>

#include "coral/actors/gate.hpp"
#include "coral/actors/sampler.hpp"
#include "coral/channels/latest.hpp"
#include "coral/core/runtime.hpp"
#include "coral/core/actor_graph.hpp"
#include "coral/training/agents_in_play.hpp"
#include "coral/training/algorithm.hpp"
#include "coral/training/learner_activity.hpp"
#include "coral/training/remote_link.hpp"
#include "coral/training/train_options.hpp"
#include "coral/training/training_stats.hpp"

namespace coral::training {

namespace detail {
class metrics_file;
class tensorboard_file;
class dir_lock;
}  // namespace detail
class dashboard;
class clip_recorder;

/// One training run. Construct, then run() once.
///
/// Thread safety: the members algorithms call during the run (episode(),
/// publish(), tell_gate(), updated() and the accessors) may be called from
/// their actors; updated() and tell_gate() from one learner actor at a time.
class training_run {
 public:
  /// Checks every option, naming the flag at fault (config_error), before
  /// anything starts: the sampler's flags, --algo (one registered with
  /// register_algorithm()), the options every run takes, the algorithm's
  /// own, and the memory the run would need.
  static void validate(const train_options& options);

  /// Progress lines (and the run's first line) go to `progress`; warnings
  /// (a checkpoint skipped, metrics not written, no plot, a checkpoint after
  /// a failure not written) to `warnings`.
  training_run(const train_options& options, std::ostream& progress, std::ostream& warnings = std::cerr);
  training_run(const training_run&) = delete;
  training_run& operator=(const training_run&) = delete;
  ~training_run();

  /// Runs to the end (see learners::train()).
  train_result run();

  // What an algorithm uses while it starts and runs.

  [[nodiscard]] const train_options& options() const noexcept { return options_; }
  [[nodiscard]] actors::sampler& sampler() noexcept { return *sampler_; }
  [[nodiscard]] training_stats& stats() noexcept { return stats_; }
  /// The weights the policy acts with: the learner publishes here.
  [[nodiscard]] latest<std::vector<float>>& weights() noexcept { return weights_; }
  /// Publishes the weights the run starts with, from start(): `own`, or on
  /// a distributed run's sampler rank the learner's (of the same layout:
  /// throws error otherwise).
  void publish_initial(std::vector<float> own);
  /// The gate in front of the batcher (valid from start() on).
  [[nodiscard]] actors::gate& gate() noexcept { return *gate_; }
  /// Env steps done so far, a resumed run's included (on a distributed
  /// run's learner: every sampler's; on a sampler: this rank's).
  [[nodiscard]] std::uint64_t env_steps() const;
  /// Env steps done before this run (a resumed run's checkpoint's; else 0).
  [[nodiscard]] std::uint64_t start_steps() const noexcept { return start_steps_; }
  /// What the learner is doing: its update loop tells it each step
  /// (learner_activity), and ends an update early when it says stop.
  [[nodiscard]] learner_activity& activity() noexcept { return activity_; }
  /// The return that counts as solved (--target-return, else the env's), if any.
  [[nodiscard]] std::optional<double> target_return() const noexcept { return target_; }

  /// Records a finished episode (any thread); ends the run once the mean of
  /// the last 100 reaches the target (unless --no-stop-when-solved).
  void episode(double episode_return, double episode_length);
  /// Publishes the learner's weights for the policy; unless
  /// --allow-non-finite, first checks that every weight is finite (throws
  /// divergence_error naming `algo` and `update`).
  void publish(std::vector<float> weights, std::string_view algo, std::uint64_t update);
  /// Tells the gate that new weights were published (for gate policies that
  /// wait for them). False once the run is stopping.
  [[nodiscard]] asio::awaitable<bool> tell_gate();
  /// After each update: records its statistics; writes a metrics row and a
  /// checkpoint when `env_steps` (the steps the learner has consumed)
  /// passed their cadence. False once the run is stopping.
  [[nodiscard]] asio::awaitable<bool> updated(const update_stats& stats, std::uint64_t updates,
                                              std::uint64_t env_steps);

  // What a distributed run's link (remote_link) uses besides the above.

  /// Ends the run: `why` (or interrupted, without one), then stop (any thread, while it runs).
  void end(std::optional<actors::gate_end> why);
  /// A line on the progress stream (any thread).
  void say(const std::string& line);
  /// A line on the warnings stream (any thread).
  void warn(const std::string& line);
  /// Whether the gate exists yet (it does from start() on).
  [[nodiscard]] bool has_gate() const noexcept { return gate_ != nullptr; }
  /// The live view's port while the run serves it (--dashboard), else 0.
  [[nodiscard]] std::uint16_t dashboard_port() const noexcept;

 private:
  struct row_window {
    std::uint64_t steps = 0;
    std::chrono::steady_clock::time_point time;
  };
  void start();
  /// Closes a distributed run's link with `why` and `text`, and says which
  /// ranks never answered with their stop.
  void close_link(stop_reason why, const std::string& text);
  /// What every rank of a distributed run must agree on.
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> fingerprint() const;
  /// A progress line or a metrics row, under rows_mutex_.
  std::string make_row(row_stream stream, row_window& window);
  void report();
  void record();
  checkpoint checkpoint_base() const;
  void write(const checkpoint& c);
  /// After a failure (or a stop abandoned at the deadline) on the learner's
  /// process: writes the final checkpoint when the learner's state is whole,
  /// and says what became of it. `failed_actor`: the actor that failed
  /// (empty for an abandoned stop); `algorithm_actors`: those the algorithm
  /// spawned, whose state a failure of theirs leaves in doubt.
  void checkpoint_after_failure(runtime& rt, const std::string& failed_actor,
                                const std::vector<std::string>& algorithm_actors) noexcept;
  /// The runtime's keep_waiting: a stop waits for a learner in the middle of
  /// a step, up to --stall-seconds in all.
  bool learner_finishing(std::chrono::steady_clock::time_point stop_began);
  /// The stall watchdog's learner counter: its steps count as progress for
  /// the first update begun since env steps last moved, not for update after
  /// update on the same data.
  std::uint64_t learner_progress();
  /// Fills graph_ from the parts of the run (after every actor is spawned)
  /// and starts serving the live view of `rt`.
  void serve_dashboard(runtime& rt, const std::string& title);
  /// Starts the recorder of `--video-every`'s clips (after start()).
  void start_clips();

  train_options options_;
  std::ostream* progress_;
  std::ostream* warnings_;
  std::uint64_t given_seed_;  // --seed as given (a sampler rank's options_ hold its own)
  std::unique_ptr<actors::sampler> sampler_;
  std::unique_ptr<algorithm> algorithm_;
  std::unique_ptr<actors::gate> gate_;
  std::unique_ptr<agents_in_play> agents_;  // multi-agent envs sampled here: counts agents in play at the gate
  std::vector<detail::dir_lock> locks_;  // the run and checkpoint directories, held while the run lives
  std::unique_ptr<detail::metrics_file> metrics_;
  std::unique_ptr<detail::tensorboard_file> tensorboard_;  // null without a run dir or with tensorboard off
  training_stats stats_;
  latest<std::vector<float>> weights_;
  std::optional<double> target_;
  std::uint64_t start_steps_ = 0;
  std::string resumed_from_;
  std::string last_checkpoint_;
  std::chrono::steady_clock::time_point started_;
  std::mutex rows_mutex_;  // the progress actor and the learner both make rows
  std::string metrics_header_;
  bool stopped_by_caller_ = false;  ///< on_metrics_row said stop (under rows_mutex_, read after the run)
  row_window progress_window_;
  row_window metrics_window_;
  std::uint64_t next_row_ = 0;         // env steps of the next metrics row (0: after every update)
  std::uint64_t next_checkpoint_ = 0;  // env steps of the next periodic checkpoint (0: none)
  runtime* runtime_ = nullptr;  // while run() runs
  std::atomic<int> ended_{-1};  // a gate_end, or -1 (stopped otherwise)
  // The window's mean reached the target at some episode: the run ends for
  // it, and is solved even if episodes still in flight then pull the mean
  // back under the target before the end.
  std::atomic<bool> reached_target_{false};
  std::unique_ptr<remote_link> bridge_;  // distributed runs: the link to the other ranks
  std::vector<float> learner_weights_;      // a sampler rank's start, until publish_initial()
  std::uint64_t learner_version_ = 0;
  learner_activity activity_;
  actor_graph graph_;                    // the live view's channels and probes (--dashboard)
  std::unique_ptr<dashboard> dashboard_;  // bound from run()'s start, serving while the runtime runs
  // learner_progress()'s state (the watchdog's thread only).
  struct progress_watch {
    std::uint64_t env_steps = ~std::uint64_t{0};
    std::uint64_t begun_then = 0;
    std::uint64_t counted = 0;
  } progress_watch_;
  // --video-every's recorder (the learner's process). Last: its thread, which
  // writes lines under rows_mutex_, is stopped before any member it uses goes.
  std::unique_ptr<clip_recorder> clips_;
};

}  // namespace coral::training
