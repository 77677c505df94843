#pragma once
// Private: what `--self-play` adds to a PPO run (ppo.cpp): the checks
// before it starts, the self-play policy and its snapshot pool, the scores
// against the pool and against the env's reference opponent, and their
// metrics columns. Torch-free.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "coral/actors/sampler.hpp"
#include "coral/learners/network.hpp"
#include "coral/learners/ppo.hpp"
#include "coral/learners/self_play.hpp"
#include "coral/training/algorithm.hpp"
#include "coral/training/checkpoint.hpp"
#include "coral/training/rollout.hpp"
#include "coral/training/train_options.hpp"

namespace coral::learners::detail {

/// A PPO run's self-play; see self_play.hpp for who plays whom.
///
/// Reported: the wins, draws and losses of the learner's last 100 episodes
/// (against the pool), and, with self_play_eval_games, those of the latest
/// match against the env's reference opponent, played greedily at each
/// snapshot, that many games from each side.
///
/// Checkpoints: save() writes the pool (its snapshots, oldest first, bit
/// for bit) and the learner's last returns into a checkpoint; saved_pool()
/// reads them back, and a run built with them goes on where the saved one
/// was. The refresh cadence is the learner's update count (a snapshot
/// joins every self_play_refresh updates), which the learner's state keeps.
///
/// Thread safety: episode() is called on the gate's actor, updated() on the
/// learner's, save() on the learner's (a checkpoint during the run) or
/// after the run, row() on either or the progress actor's: one mutex
/// guards the scores.
class self_play_run {
 public:
  /// Refuses (config_error) a run of `o` on envs like `probe` that cannot
  /// self-play: one team (errors::self_play_one_team); a match asked for
  /// on an env without a one-slot reference opponent of the same spaces
  /// (errors::self_play_no_reference). Does nothing without --self-play.
  static void check(const training::train_options& o, const envs::env& probe);

  /// What a checkpoint kept of a run's self-play: the pool, oldest first,
  /// and the learner's last returns (the pool's scores).
  struct saved_state {
    std::vector<std::vector<float>> pool;
    std::vector<double> returns;
  };

  /// The self-play state `c` holds, for a network of `weights` weights:
  /// nothing (an empty pool) when `c` has none, as a checkpoint of a run
  /// without --self-play or of an older format. Throws usage_error
  /// (errors::self_play_pool_mismatch, self_play_pool_malformed) when its
  /// pool is not snapshots of that network.
  [[nodiscard]] static saved_state saved_pool(const training::checkpoint& c, std::size_t weights);

  /// The policy of run `o` over sampler `s`'s rows, with `initial` (the
  /// learner's first published weights) the pool's first snapshot, or, from
  /// a checkpoint, `saved`'s pool (its newest self_play_pool snapshots) and
  /// scores; the acting streams seeded by `seed`.
  self_play_run(const training::train_options& o, const network_spec& spec, actors::sampler& s, std::uint64_t seed,
                std::vector<float> initial, saved_state saved = {});

  /// Writes the pool and the learner's last returns into `c` (records
  /// `self_play_pool` and `self_play_returns`).
  void save(training::checkpoint& c) const;

  /// What the batcher acts with.
  [[nodiscard]] actors::policy& policy() noexcept { return *policy_; }
  /// Makes `a` train on the learner's rows only, with the learner's samples and states.
  void wire(training::rollout_assembler& a) const;
  /// A learner episode ended with return `r`.
  void episode(double r);
  /// The learner finished update `updates` with `weights`: every
  /// self_play_refresh updates they join the pool, and a match is played.
  void updated(std::uint64_t updates, const std::vector<float>& weights);
  /// The metrics columns it adds, each after a comma.
  [[nodiscard]] std::string_view columns() const noexcept { return columns_; }
  /// Its part of a row: metrics cells (each after a comma), or a progress text.
  [[nodiscard]] std::string row(training::row_stream stream) const;

 private:
  const training::train_options* options_;
  const ppo_options* p_;
  network_spec spec_;
  snapshot_pool pool_;
  std::vector<std::vector<float>> snapshots_;  // the learner's copy of the pool
  std::unique_ptr<self_play_policy> policy_;
  std::string columns_;
  mutable std::mutex mutex_;
  std::deque<double> window_;  // the learner's last 100 returns
  match_score first_, second_;  // the latest match, from each side
};

}  // namespace coral::learners::detail
