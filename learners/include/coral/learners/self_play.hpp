#pragma once
/// \file
/// Self-play (`coral train --self-play`): one team of each env is the
/// learner's, the other teams play with frozen snapshots of the learner's
/// policy drawn from a pool, and a match against an env's reference
/// opponent measures the learner outside the pool. Torch-free.
///
/// Which team learns: in env e (batch rows e × max_agents() on), team
/// e mod team_count() is the learner's, for the life of the run; the other
/// teams' slots are opponents. In a two-player game half the envs train the
/// first player and half the second, so one policy learns both sides (its
/// observations are from the mover's point of view).
///
/// Whom an opponent slot plays as: at the start of each of its episodes it
/// draws the learner itself with probability `latest` (a mirror match: the
/// slot acts with the learner's weights and is trained on as well, so both
/// sides of that game teach the policy), and otherwise a snapshot of the
/// pool, uniformly. Mirror matches keep the two sides of a game learning in
/// step; the snapshots keep the policy beating its past selves (without
/// them a policy can forget how to meet a line it no longer plays, and
/// without mirror matches one side can run away from the other: in
/// tic-tac-toe, a first player that wins every game against second players
/// that never learn to block).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "coral/actors/policy.hpp"
#include "coral/channels/latest.hpp"
#include "coral/core/rng.hpp"
#include "coral/envs/config.hpp"
#include "coral/learners/mlp_policy.hpp"
#include "coral/learners/network.hpp"

namespace coral::learners {

/// The frozen snapshots opponents draw from: each one a set of flat weights
/// as the learner publishes them. The learner publishes the whole pool
/// anew when it changes.
using snapshot_pool = latest<std::vector<std::vector<float>>>;

/// Adds `weights` to `pool` (oldest first) as its newest snapshot, dropping
/// the oldest when it holds `capacity` already: the latest weights are
/// always in the pool.
void add_snapshot(std::vector<std::vector<float>>& pool, std::vector<float> weights, std::size_t capacity);

/// The policy of a self-play run: the learner's mlp_policy for the
/// learner's rows, and one mlp_policy per pool snapshot for the others.
///
/// act(): each active row of the learner's team acts with the learner's
/// weights (its log probability and value written, as mlp_policy does);
/// each active opponent row acts with what it drew when its slot's episode
/// started (see the file comment; a row starts an episode with terminated
/// or truncated flags on it, an env reset after a failure, or no step yet
/// in its episode): the learner, or a snapshot. Inactive rows are left
/// alone. learner_rows() says which rows the learner's weights act for:
/// what the rollout assembler trains on
/// (rollout_assembler::record_acted_from()); an opponent row's byte
/// changes only where its episode starts.
///
/// load_weights() takes the learner's weights (the batcher calls it with
/// each version published) and, when the pool's version moved, loads every
/// snapshot into its policy. Allocation: none in act() (after the first
/// batch); load_weights() may allocate a policy per new pool entry.
///
/// Thread safety: one batcher at a time, as for mlp_policy; the pool is
/// read through latest<>.
class self_play_policy final : public actors::policy {
 public:
  /// For `rows` batch rows of envs of `agents` slots, slot i of env e in
  /// team `row_teams[e × agents + i]` of `teams`; opponents draw from
  /// `pool` (which must outlive the policy and hold a snapshot before the
  /// first act()), with draws seeded by `seed`; an opponent plays the
  /// learner itself with probability `latest`. `use_masks`: as
  /// mlp_policy::set_use_masks().
  self_play_policy(const network_spec& spec, std::size_t rows, std::uint64_t seed, std::size_t agents,
                   std::size_t teams, std::span<const std::int32_t> row_teams, const snapshot_pool& pool,
                   double latest, bool use_masks);

  void act(const actors::policy_rows& rows) override;
  void load_weights(std::span<const float> weights) override;

  /// 1 for each batch row the learner's weights act for, 0 for an opponent's.
  [[nodiscard]] std::span<const std::uint8_t> learner_rows() const noexcept { return learner_rows_; }
  /// The learner's policy (its sampled actions and states, by batch row).
  [[nodiscard]] const mlp_policy& learner() const noexcept { return *learner_; }
  /// What opponent row `row` last drew: a snapshot's index in the pool,
  /// or learner_draw (for tests).
  [[nodiscard]] std::size_t snapshot_of(std::size_t row) const noexcept { return drawn_[row]; }
  /// snapshot_of() for a row that plays as the learner.
  static constexpr std::size_t learner_draw = static_cast<std::size_t>(-1);

 private:
  void refresh_snapshots();

  network_spec spec_;
  std::size_t rows_;
  std::uint64_t seed_;
  bool use_masks_;
  double latest_;
  const snapshot_pool* pool_;
  std::uint64_t pool_version_ = 0;
  std::size_t pool_size_ = 0;
  std::unique_ptr<mlp_policy> learner_;
  std::vector<std::unique_ptr<mlp_policy>> snapshots_;
  std::vector<std::uint8_t> learner_team_;  // per row: 1 in the learner's team
  std::vector<std::uint8_t> learner_rows_;  // per row: 1 while the learner's weights act for it
  std::vector<std::size_t> drawn_;  // per opponent row: its snapshot, or learner_draw
  coral::rng rng_;
  // Per act(): the learner's rows and each snapshot's, as one-row ranges.
  std::vector<actors::row_range> learner_ranges_;
  std::vector<std::vector<actors::row_range>> snapshot_ranges_;
};

/// Wins, draws and losses: episodes whose return was above, at or below 0
/// (a two-player game's +1, 0, −1).
struct match_score {
  std::uint64_t wins = 0;
  std::uint64_t draws = 0;
  std::uint64_t losses = 0;
  /// Counts one episode of return `r`.
  void add(double r) noexcept { r > 0 ? ++wins : r < 0 ? ++losses : ++draws; }
  /// Episodes counted.
  [[nodiscard]] std::uint64_t games() const noexcept { return wins + draws + losses; }
};

/// The env args of a match against `env`'s reference opponent from `side`
/// (first or second): `args` with `opponent=reference` and `side` set
/// (two_player_game.hpp's keys).
[[nodiscard]] envs::config_args reference_args(envs::config_args args, const std::string& side);

/// Plays `games` episodes of env `env` (a one-slot env: the reference
/// opponent inside it) with a policy of `spec` and `weights`, greedy (the
/// most probable legal action), the env seeded by `seed`; scores the
/// agent's returns. Throws coral::error (errors::match_too_long) when an
/// episode runs past `longest` steps (an env whose opponent never ends a
/// game).
[[nodiscard]] match_score play_reference(const network_spec& spec, std::span<const float> weights,
                                         const std::string& env, const envs::config_args& args, std::size_t games,
                                         std::uint64_t seed, std::int64_t longest = 100'000);

}  // namespace coral::learners
