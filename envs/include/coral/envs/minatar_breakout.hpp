#pragma once
/// \file
/// `minatar/breakout`: MinAtar's Breakout (common rules in minatar.hpp).
///
/// Rules, per step, in this order:
/// 1. The paddle, on the bottom row, moves one cell left or right (clamped).
/// 2. The ball moves one cell along its diagonal. Off a side wall it stays in
///    the edge column and its horizontal direction flips. Above the top row
///    it stays in row 0 and its vertical direction flips. Otherwise, into a
///    brick: the brick breaks (+1), the ball stays in its previous row and its
///    vertical direction flips; a ball that struck a brick on the step before
///    passes through this one instead (no break, no reward, no bounce).
///    Otherwise, into the bottom row: if no brick is left, three full rows of
///    bricks come back; a ball that was above the paddle bounces straight
///    back up, one that lands on the paddle from the side bounces back the
///    way it came, any other ball ends the game.
///
/// Start: bricks fill rows 1–3, the paddle is at column 4, the ball at
/// row 3 in column 0 heading down-right or in column 9 heading down-left
/// (a fair coin). No difficulty ramp.
///
/// Channels: 0 paddle, 1 ball, 2 trail (the ball's previous cell), 3 brick.
/// Minimal actions: no-op, left, right.
///
/// Random policy (sticky 0.1, 10,000 episodes): return 0.51, 11.2 steps
/// (BENCHMARKS.md). MinAtar's published results at 5M frames (moving average of 100
/// episodes, 30 runs): DQN about 10, AC(0.8) about 17 (Young & Tian 2019; the learning curves
/// in MinAtar's README).

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "coral/envs/minatar.hpp"

namespace coral::envs::minatar {

/// Breakout's state and rules.
class breakout {
 public:
  /// Registry name.
  static constexpr std::string_view name = "minatar/breakout";
  /// One-line description.
  static constexpr std::string_view description =
      "MinAtar Breakout (Young & Tian 2019): channels paddle, ball, trail, brick; random policy 0.51 return, "
      "11 steps; published DQN about 10, AC(0.8) about 17 at 5M frames";
  /// Number of observation channels.
  static constexpr std::size_t channels = 4;
  /// The minimal action set.
  static constexpr std::array<action, 3> minimal_actions{action::noop, action::left, action::right};
  /// Config keys besides the common ones: none.
  [[nodiscard]] static std::vector<config_key> game_keys() { return {}; }

  /// The whole game state.
  struct state {
    int paddle = 4;                          ///< paddle column, on row 9
    int ball_x = 0, ball_y = 3;              ///< ball cell
    int ball_dx = 1, ball_dy = 1;            ///< ball direction, each ±1 (dy +1 is down)
    int last_x = 0, last_y = 3;              ///< the ball's previous cell (the trail)
    std::array<std::uint16_t, grid_size> bricks{};  ///< per row, bit x set if a brick is at column x
    bool struck = false;                     ///< the ball broke a brick on the last step
  };

  /// Builds the game from its config.
  explicit breakout(const env_config& config);

  /// Starts a new game.
  void reset(rng& r) noexcept;
  /// One step with action `a`.
  step_result step(action a, rng& r) noexcept;
  /// Sets the channels of the current state in a zeroed observation row.
  void draw(float* observation) const noexcept;

  /// The current state.
  [[nodiscard]] const state& current() const noexcept { return state_; }
  /// Replaces the state (for tests).
  void set_state(const state& s) noexcept { state_ = s; }

  /// Bricks of a fresh wall: rows 1–3 full.
  static void fill_bricks(state& s) noexcept;

 private:
  state state_;
};

}  // namespace coral::envs::minatar

namespace coral::envs {
extern template class minatar_env<minatar::breakout>;
/// The `minatar/breakout` env.
using minatar_breakout = minatar_env<minatar::breakout>;
}  // namespace coral::envs
