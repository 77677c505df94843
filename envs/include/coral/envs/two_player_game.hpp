#pragma once
/// \file
/// `two_player_game`: the base of turn-based two-player board games
/// (tictactoe.hpp, connect4.hpp). It owns the turn order, the two modes, the
/// rewards and the masks; a game supplies its rules.
///
/// ## Modes (env arg `opponent`)
///
/// - `opponent=none` (the default): two agent slots, one per player. Slot 0
///   moves first, slot 1 second; slot i belongs to team i (team_count() 2).
///   On each step only the player to move is active. When a move ends the
///   game, both rows end on that step: the mover's row (active) and the
///   other player's (waiting, see env.hpp) get their reward and
///   `terminated`.
/// - `opponent=random` or the game's reference opponent (by its name, or
///   `opponent=reference`, which self-play's match uses): one agent slot,
///   one team; the opponent plays the other side inside the env, replying
///   within the same step, so the one row is active on every step. The
///   agent's side is set by `side` (`first`, `second`, or `random`: drawn
///   each episode from the env's rng).
///
/// With `opening=N` (two-agent mode only), each game starts after k random
/// legal moves, k uniform in 0..N (N ≤ 4): the slot to move then is the
/// one whose turn it is. Self-play learns from more varied positions so;
/// with an opponent the key is ignored (evaluation plays from the empty board).
///
/// Rewards, at the end of the game only: +1 for the winner, −1 for the
/// loser, 0 for both on a draw. An illegal action (a value the mask marks
/// illegal, e.g. from a policy that ignores masks) loses the game for the
/// player who took it: −1 for it, +1 for the other player.
///
/// Observations are from the point of view of the row's player: +1 for its
/// own pieces, −1 for the other player's, 0 for empty cells. With
/// `board=cells` the observation is a MultiDiscrete of 3 values per cell
/// instead (0 empty, 1 own, 2 the other's), which a network sees one-hot:
/// own and other pieces on inputs of their own rather than as opposite
/// signs of one (a sign feature that says "play on your column" also says
/// "do not play on theirs", the opposite of a block). With `board=planes`
/// it is a Box of rows x columns x 2 in [0, 1] (height, width, channels:
/// own pieces, the other's), the grid a convolution (`--conv`) reads. With
/// `board=threats` it is those two planes and two more (rows x columns x
/// 4): the empty cells where the row's player would complete a line by
/// placing a piece there (four in connect four, three in tic-tac-toe), and
/// the cells where the other player would. A threat plane marks a cell
/// whether or not it can be played now (in connect four a threat above a
/// column's top is one to keep, or to deny). The action mask (Discrete(n):
/// n bytes) marks the legal moves.
///
/// Thread safety: as for every env.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "coral/core/rng.hpp"
#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"

namespace coral::envs {

/// How a move left the game.
enum class game_outcome : std::uint8_t {
  running,  ///< the game goes on
  win,      ///< the mover won
  draw,     ///< no legal move is left and nobody won
};

/// A turn-based two-player game as an env; see the file comment.
class two_player_game : public env {
 public:
  void reset(const env_rows& rows) override;
  void step(const env_rows& rows) override;
  [[nodiscard]] const space& observation_space() const noexcept override { return observation_space_; }
  [[nodiscard]] const space& action_space() const noexcept override { return action_space_; }
  [[nodiscard]] std::size_t max_agents() const noexcept override { return opponent_ == opponent_kind::none ? 2 : 1; }
  [[nodiscard]] std::size_t action_mask_size() const noexcept override {
    return static_cast<std::size_t>(action_space_.n());
  }
  [[nodiscard]] std::size_t team_count() const noexcept override { return max_agents(); }
  [[nodiscard]] std::size_t team_of(std::size_t slot) const noexcept override { return slot; }

  /// The player to move next: 0 (first) or 1 (second).
  [[nodiscard]] int to_move() const noexcept { return to_move_; }
  /// In opponent mode, the player the agent plays this episode (0 or 1).
  [[nodiscard]] int agent_player() const noexcept { return agent_player_; }

 protected:
  /// The common config keys: opponent (`reference` is the game's reference
  /// opponent's name), side, board and opening.
  [[nodiscard]] static std::vector<config_key> common_keys(std::string_view reference, std::string_view reference_what);

  /// Reads `opponent` and `side`; rejects (config_error naming the key) any
  /// other value than the documented ones.
  /// `rows` x `columns` is the board's grid (the signs observation has one
  /// value per cell, row-major).
  two_player_game(const env_config& config, env_seed seed, std::string_view reference, std::size_t rows,
                  std::size_t columns, std::int32_t actions);

  /// Empties the board.
  virtual void clear_board() = 0;
  /// True if `action` is a legal move now.
  [[nodiscard]] virtual bool legal(std::int32_t action) const = 0;
  /// Plays legal `action` for `player` and says how it left the game.
  virtual game_outcome play(std::int32_t action, int player) = 0;
  /// The reference opponent's move for `player` (a legal one).
  [[nodiscard]] virtual std::int32_t reference_move(int player, rng& r) = 0;
  /// Writes the board from `player`'s point of view.
  virtual void write_observation(std::span<float> obs, int player) const = 0;
  /// True if `cell` (an index as write_observation() writes it) is empty
  /// and a piece of `player` there would complete a line.
  [[nodiscard]] virtual bool completes(std::size_t cell, int player) const = 0;

 private:
  enum class opponent_kind : std::uint8_t { none, random, reference };
  enum class side_kind : std::uint8_t { first, second, random };

  /// The row that plays `player`.
  [[nodiscard]] std::size_t row_of(int player) const noexcept { return opponent_ == opponent_kind::none ? player : 0; }
  void write_rows(const env_rows& rows) const;
  /// write_observation(), then, with board=cells, each cell as a category,
  /// with board=planes, each cell as two planes, and with board=threats as
  /// four.
  void observe(std::span<float> obs, int player) const;
  void write_mask(std::span<std::uint8_t> mask) const;
  std::int32_t opponent_move();
  /// A legal move uniformly at random.
  std::int32_t random_move();
  /// Ends the game: `winner` is 0, 1 or -1 for a draw.
  void finish(const env_rows& rows, int winner);

  space observation_space_;
  space action_space_;
  rng rng_;
  opponent_kind opponent_ = opponent_kind::none;
  side_kind side_ = side_kind::first;
  int to_move_ = 0;
  int agent_player_ = 0;
  std::int64_t opening_ = 0;
  enum class board_kind : std::uint8_t { signs, cells, planes, threats };
  board_kind board_ = board_kind::signs;
};

}  // namespace coral::envs
