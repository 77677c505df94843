#pragma once
/// \file
/// A training run: the sampler's actors wired on one runtime with, for PPO,
/// the rollout assembler and the PPO learner, or, for DQN, the replay
/// feeder, the replay actor and the DQN learner; with progress, metrics and
/// checkpoints.
/// This is `coral train`; tests call it in-process.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <ostream>
#include <string>
#include <vector>

#include "coral/actors/sampler_options.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/ppo_learner.hpp"
#include "coral/learners/r2d2.hpp"
#include "coral/learners/transport.hpp"

namespace coral::learners {

/// Everything a run is made from (the flags of `coral train`).
struct train_options {
  actors::sampler_options sampler;     ///< env, env args, seed, topology, envs, threads, executor
  std::string algo = "ppo";            ///< ppo, dqn or r2d2
  ppo_config ppo;
  dqn_config dqn;                      ///< DQN's, and R2D2's shared with it
  r2d2_config r2d2;
  std::vector<std::size_t> hidden{32, 32};  ///< 64 wide costs about 4x with the reference BLAS; see BENCHMARKS.md
  std::size_t horizon = 64;            ///< steps per row per segment
  std::size_t max_policy_lag = 0;      ///< 0: strictly on-policy
  std::size_t frames = 1;              ///< observations stacked into the policy's input
  /// PPO: width of an LSTM after the hidden layers (`--lstm`; network_spec::lstm); 0: none.
  std::size_t lstm = 0;
  /// PPO: normalise the network's input by running moments (`--obs-norm`; network_spec).
  bool normalize_observations = false;
  std::uint64_t total_steps = 500'000; ///< env steps to run at most
  std::optional<double> target_return; ///< default: the env's solved_return()
  bool stop_when_solved = true;
  std::string checkpoint_dir;          ///< empty: no checkpoints
  std::uint64_t checkpoint_every = 0;  ///< env steps between checkpoints; 0: only at the end
  std::size_t keep_checkpoints = 3;    ///< checkpoints of this run kept, the newest; 0: all
  bool resume = false;
  std::string run_dir;                 ///< empty: no metrics files
  double progress_seconds = 2.0;       ///< progress line period; 0: none
  double stall_seconds = 30.0;         ///< stop a run with no env step and no update for this long; 0: never
  /// Called with the metrics header and each metrics row (metrics.csv's
  /// text, without the newline), whether or not a run dir is written, on the
  /// learner's thread. Returning false stops the run as a signal does (a
  /// final checkpoint, result.interrupted). Empty: none.
  std::function<bool(std::string_view header, std::string_view row)> on_metrics_row;
  /// The ranks of a distributed run (`--distributed`; docs/distributed.md):
  /// rank 0 learns, the others sample, each running this function with the
  /// same options. Null: one process.
  std::shared_ptr<transport> remote;
};

/// Whether `o` is a distributed run's learner (rank 0).
[[nodiscard]] inline bool learner_rank(const train_options& o) { return o.remote && o.remote->rank() == 0; }
/// Whether `o` is a distributed run's sampler (rank 1 and up).
[[nodiscard]] inline bool sampler_rank(const train_options& o) { return o.remote && o.remote->rank() != 0; }
/// The sampling processes of a run: the ranks but the learner, or 1.
[[nodiscard]] inline std::size_t sampler_ranks(const train_options& o) {
  return o.remote && o.remote->size() > 1 ? o.remote->size() - 1 : 1;
}

/// How a run ended.
struct train_result {
  /// The mean return of the last 100 episodes reached the target during the
  /// run (a run stops there unless --keep-going; the episodes still in flight
  /// may leave the final mean_return a little under it).
  bool solved = false;
  bool interrupted = false;            ///< stopped by a signal
  std::uint64_t env_steps = 0;         ///< acted on, this run included resumed ones
  double wall_seconds = 0;             ///< this process's run
  double mean_return = 0;              ///< last 100 episodes (fewer if fewer)
  double mean_length = 0;
  std::uint64_t episodes = 0;
  std::uint64_t updates = 0;
  std::optional<double> target_return;
  std::string checkpoint;              ///< the last checkpoint written, if any
  std::string resumed_from;            ///< the checkpoint this run continued, if it resumed
  bool metrics_written = false;        ///< run_dir/metrics.csv holds every row (false without a run dir)
  /// The final line of `coral train`: one JSON object.
  [[nodiscard]] std::string to_json(const train_options& o) const;
};

/// Checks every option, naming the flag at fault (config_error), before
/// anything starts: the sampler's flags (see resolve_wiring), --algo,
/// --horizon, --epochs, --minibatch-size, --total-steps, --frames, rates,
/// --resume without --checkpoint-dir; for DQN its replay, exploration and
/// target flags; and, for a built-in --algo, any setting that differs from
/// its default and that only other algorithms read (errors::setting_of_other_algo).
void validate(const train_options& options);

/// Throws config_error (errors::setting_of_other_algo) when `flag`, a flag
/// of `coral train` as it is spelt there (`--seq-len`), sets a setting that
/// the built-in algorithm `algo` does not read. validate() sees only values,
/// so it cannot tell a flag given at its default from one not given; the
/// command calls this for every flag given, on the command line or in a
/// config file, so that `--replay-capacity 100000` (the default) under PPO is
/// refused like any other value. Does nothing for a flag every algorithm
/// takes, or for an algorithm that is not built in.
void check_flag_read(std::string_view flag, std::string_view algo);

/// Runs training to the end: solved (when stop_when_solved), total_steps,
/// or a signal (SIGINT/SIGTERM: a checkpoint is written and the run ends
/// normally). Progress lines go to `progress`. Before anything starts, the
/// run and checkpoint directories are created and test-written, and a fresh
/// run into a checkpoint directory holding checkpoints is refused. Throws
/// config_error for bad options or unusable directories, checkpoint_error for
/// a refused checkpoint, actor_failed if an actor failed.
train_result train(const train_options& options, std::ostream& progress);

}  // namespace coral::learners
