#pragma once
/// \file
/// `connect4`: four in a row on a 7-column, 6-row upright board, as a
/// two_player_game (see two_player_game.hpp for the modes, rewards, masks
/// and observations).
///
/// The action is the column to drop a piece into (Discrete(7)), masked to
/// the columns that are not full. Four pieces of one player in a row,
/// column or diagonal win; a full board without that is a draw.
/// Observation Box((42,), -1, 1): cell (row, column) at 7·row + column, row 0
/// the bottom; +1 own piece, −1 the other's, 0 empty.
///
/// Reference opponent `search`: a negamax search with alpha-beta pruning
/// `depth` plies deep (env arg, default 4). A won position scores 1000 plus
/// the plies left (sooner is better); at the horizon a position scores the
/// windows of four cells that only one player occupies (2 pieces: 2, 3
/// pieces: 5, for the player to move minus the other's) plus 3 per piece in
/// the centre column. Equally scored moves are drawn uniformly from the env's
/// rng. At depth ≥ 2 it takes an immediate win and blocks an immediate loss.
///
/// Optimum: the first player wins under perfect play, so the best expected
/// return as first player is +1 against any opponent; against `search` a
/// strong policy wins nearly every game as first player (issue 52's target:
/// 90%). In two-agent mode the game is zero-sum.

#include <array>
#include <string_view>
#include <vector>

#include "coral/envs/two_player_game.hpp"

namespace coral::envs {

/// Connect four; see the file comment.
class connect4 final : public two_player_game {
 public:
  /// Registry name.
  static constexpr std::string_view name = "connect4";
  /// One-line description.
  static constexpr std::string_view description =
      "two players, 7x6, masked full columns; opponent=search is a depth-limited search (optimum as first player: +1)";
  /// Config keys: opponent (none, random, search), side, depth.
  [[nodiscard]] static std::vector<config_key> config_keys();

  static constexpr int columns = 7;  ///< board width
  static constexpr int rows = 6;     ///< board height

  /// A board: cell (row, column) at 7·row + column, row 0 the bottom; 0
  /// empty, 1 the first player's piece, 2 the second's.
  struct board {
    std::array<std::int8_t, 42> cells{};
    std::array<std::int8_t, 7> heights{};  ///< pieces in each column

    /// True if `column` has room.
    [[nodiscard]] bool open(int column) const noexcept { return heights[static_cast<std::size_t>(column)] < rows; }
    /// Drops a piece of `player` (0 or 1) into open `column`; true if it wins.
    bool drop(int column, int player) noexcept;
    /// Takes the top piece out of `column` (undoes drop()).
    void lift(int column) noexcept;
    /// True if no column has room.
    [[nodiscard]] bool full() const noexcept;
  };

  connect4(const env_config& config, env_seed seed);

  [[nodiscard]] std::optional<double> optimal_return() const noexcept override;

  /// The search opponent's move for `player` on `b` (which must have an
  /// open column and no winner), searching `depth` plies.
  [[nodiscard]] static std::int32_t search_move(board b, int player, int depth, rng& r);

  /// The current board.
  [[nodiscard]] const board& position() const noexcept { return board_; }

 protected:
  void clear_board() override { board_ = board{}; }
  [[nodiscard]] bool legal(std::int32_t action) const override { return board_.open(action); }
  game_outcome play(std::int32_t action, int player) override;
  [[nodiscard]] std::int32_t reference_move(int player, rng& r) override {
    return search_move(board_, player, depth_, r);
  }
  void write_observation(std::span<float> obs, int player) const override;
  [[nodiscard]] bool completes(std::size_t cell, int player) const override;

 private:
  board board_{};
  int depth_;
  bool first_only_;
};

}  // namespace coral::envs
