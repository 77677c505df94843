#pragma once
/// \file
/// What a training run is made from and how it ended: the settings every run
/// has, whatever it trains, and the algorithm's own options, held as its
/// descriptor's options type (algorithm_descriptor.hpp).

#include <any>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "coral/actors/sampler_options.hpp"
#include "coral/core/error.hpp"
#include "coral/training/remote_link.hpp"

namespace coral::training {

/// The live view of a run (`--dashboard`, dashboard.hpp).
struct dashboard_options {
  bool on = false;                  ///< serve it
  std::string bind = "127.0.0.1";   ///< an IPv4 or IPv6 address; another than loopback exposes the page
  std::uint16_t port = 0;           ///< 0: any free port (the run prints which)
};

/// The most updates `--video-every` may give between clips.
inline constexpr std::uint64_t max_video_every = 1'000'000;
/// The most frames (env steps) in one clip of `--video-every`: an episode
/// longer than this is cut there (halfcheetah's 1000-step episodes fit).
inline constexpr std::size_t max_clip_steps = 1000;

/// Everything a run is made from (the flags of `coral train`).
struct train_options {
  actors::sampler_options sampler;     ///< env, env args, seed, topology, envs, threads, executor
  std::string algo = "ppo";            ///< a registered algorithm's name (algorithm_descriptor::name)
  /// The algorithm's own options: a value of its descriptor's options type
  /// (learners::ppo_options for ppo, ...). Empty: the descriptor's defaults,
  /// the same ones `coral train --algo NAME` and `coral.train(algo=NAME)` get.
  std::any algo_options;
  /// Hidden layer widths. Empty: the network's default, two layers of 32
  /// for an MLP, one of 128 after a convolution (learners::resolve_layers).
  std::vector<std::size_t> hidden;
  /// Convolutions before the hidden layers (`--conv`), one `C:K[:S]` value
  /// per layer (channels, kernel side, stride), or the one value `none`.
  /// Empty: MinAtar's (16:3) for a grid observation (a Box of shape
  /// (height, width, channels)), none for any other.
  std::vector<std::string> conv;
  /// What computes the network's updates: "fused" (coral's CPU engine,
  /// where it has the network; the torch twin otherwise) or "torch" (the
  /// libtorch twin). Checkpoints move between them unchanged.
  std::string backend = "fused";
  std::uint64_t total_steps = 500'000; ///< env steps to run at most
  std::optional<double> target_return; ///< default: the env's solved_return()
  bool stop_when_solved = true;
  std::string checkpoint_dir;          ///< empty: no checkpoints
  std::uint64_t checkpoint_every = 0;  ///< env steps between checkpoints; 0: only at the end
  std::size_t keep_checkpoints = 3;    ///< checkpoints of this run kept, the newest; 0: all
  bool resume = false;
  std::string run_dir;                 ///< empty: no metrics files
  /// Writes a TensorBoard event file in run_dir beside metrics.csv: each
  /// metrics row as scalars at its env steps, the run's settings as text.
  bool tensorboard = true;
  double progress_seconds = 2.0;       ///< progress line period; 0: none
  double stall_seconds = 30.0;         ///< stop a run with no env step and no update for this long; 0: never
  /// Serve the live view while the run goes on (on the learner's process).
  dashboard_options dashboard;
  /// Every this many updates, record a clip of one episode of the newest
  /// published policy into `<run_dir>/videos/update-<updates>.mp4`, on a
  /// thread of its own (clip_recorder.hpp); 0: none. At most max_video_every.
  std::uint64_t video_every = 0;
  /// Called with the metrics header and each metrics row (metrics.csv's
  /// text, without the newline), whether or not a run dir is written, on the
  /// learner's thread. Returning false stops the run as a signal does (a
  /// final checkpoint, result.interrupted). Empty: none.
  std::function<bool(std::string_view header, std::string_view row)> on_metrics_row;
  /// The ranks of a distributed run (`--distributed`; docs/distributed.md;
  /// distributed::over() makes them from a transport): rank 0 learns, the
  /// others sample, each running with the same options. Null: one process.
  std::shared_ptr<remote_ranks> remote;
};

/// The algorithm options of `o` as `Options`, the algorithm's options type;
/// default ones are put there first when `o` holds none. Throws usage_error
/// when `o` holds another type's.
template <class Options>
Options& options_of(train_options& o) {
  if (!o.algo_options.has_value()) o.algo_options = Options{};
  auto* held = std::any_cast<Options>(&o.algo_options);
  if (held == nullptr) {
    throw usage_error("train_options::algo_options holds another algorithm's options (" +
                      std::string(o.algo_options.type().name()) + "), not " + typeid(Options).name());
  }
  return *held;
}

/// The algorithm options of `o` as `Options`; usage_error when it holds none
/// or another type's (a run fills in its descriptor's defaults before any
/// algorithm reads them).
template <class Options>
const Options& options_of(const train_options& o) {
  const auto* held = std::any_cast<Options>(&o.algo_options);
  if (held == nullptr) {
    throw usage_error("train_options::algo_options does not hold " + std::string(typeid(Options).name()));
  }
  return *held;
}

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
  /// Env failures survived under `--on-env-error reset` (this process's
  /// envs). The run goes on however many there are: the count is how the
  /// final line says a run was mostly failures.
  std::uint64_t env_failures = 0;
  std::optional<double> target_return;
  std::string checkpoint;              ///< the last checkpoint written, if any
  std::string resumed_from;            ///< the checkpoint this run continued, if it resumed
  bool metrics_written = false;        ///< run_dir/metrics.csv holds every row (false without a run dir)
  /// The final line of `coral train`: one JSON object.
  [[nodiscard]] std::string to_json(const train_options& o) const;
};

}  // namespace coral::training
