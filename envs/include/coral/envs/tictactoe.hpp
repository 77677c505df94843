#pragma once
/// \file
/// `tictactoe`: noughts and crosses on a 3×3 board, as a two_player_game
/// (see two_player_game.hpp for the modes, rewards, masks and observations).
///
/// Cells are numbered 0..8 row by row from the top left; the action is the
/// cell to mark (Discrete(9)), masked to the empty cells. Three marks of one
/// player in a row, column or diagonal win; a full board without that is a
/// draw. Observation Box((9,), -1, 1): +1 own mark, −1 the other's, 0 empty.
///
/// Reference opponent `minimax`: perfect play, from a table of every
/// position's game value computed once per process (3^9 entries); among
/// equally good moves it draws one uniformly from the env's rng.
///
/// Optimum: perfect play by both sides is a draw, so against `minimax` the
/// best expected return is 0 as either player (a policy that never loses);
/// against `random` it is above 0.9 as first player. In two-agent mode the
/// game is zero-sum: the returns of the two slots add to 0.

#include <array>
#include <string_view>
#include <vector>

#include "coral/envs/two_player_game.hpp"

namespace coral::envs {

/// Tic-tac-toe; see the file comment.
class tictactoe final : public two_player_game {
 public:
  /// Registry name.
  static constexpr std::string_view name = "tictactoe";
  /// One-line description.
  static constexpr std::string_view description =
      "two players, 3x3, masked full cells; opponent=minimax plays perfectly (optimum vs minimax: 0, a draw)";
  /// Config keys: opponent (none, random, minimax), side.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// A board: 0 empty, 1 the first player's mark, 2 the second's.
  using board = std::array<std::int8_t, 9>;

  tictactoe(const env_config& config, env_seed seed);

  [[nodiscard]] std::optional<double> optimal_return() const noexcept override { return 0.0; }

  /// True if `player` (0 or 1) has three in a row on `b`.
  [[nodiscard]] static bool wins(const board& b, int player) noexcept;
  /// The game value of `b` for the player to move (who is `player`): +1
  /// win, 0 draw, −1 loss under perfect play by both.
  [[nodiscard]] static int value(const board& b, int player);
  /// A perfect move for `player` on `b` (which must have an empty cell and
  /// no winner), uniform among the best ones.
  [[nodiscard]] static std::int32_t minimax_move(const board& b, int player, rng& r);

  /// The current board.
  [[nodiscard]] const board& cells() const noexcept { return board_; }

 protected:
  void clear_board() override { board_.fill(0); }
  [[nodiscard]] bool legal(std::int32_t action) const override { return board_[static_cast<std::size_t>(action)] == 0; }
  game_outcome play(std::int32_t action, int player) override;
  [[nodiscard]] std::int32_t reference_move(int player, rng& r) override { return minimax_move(board_, player, r); }
  void write_observation(std::span<float> obs, int player) const override;
  [[nodiscard]] bool completes(std::size_t cell, int player) const override;

 private:
  board board_{};
};

}  // namespace coral::envs
