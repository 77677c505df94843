#pragma once
/// \file
/// `minatar/asterix`: MinAtar's Asterix (common rules in minatar.hpp).
///
/// The player moves freely in rows 1–8; eight lanes (rows 1–8, one object
/// each at most) carry enemies and gold from one side to the other.
///
/// Rules, per step, in this order:
/// 1. When the spawn countdown is at 0, an object enters a free lane, drawn
///    uniformly among the free ones (none if every lane is taken): from the
///    left heading right or from the right heading left (a fair coin), gold
///    with probability 1/3, else an enemy. The countdown restarts at the
///    spawn interval (10).
/// 2. The player moves one cell (clamped to columns 0–9, rows 1–8).
/// 3. An object on the player's cell: gold is collected (+1, removed), an
///    enemy ends the game.
/// 4. When the move countdown is at 0, it restarts at the move interval (5)
///    and every object moves one cell; one that leaves the grid is removed,
///    one that lands on the player is collected or ends the game as in 3.
/// 5. Both countdowns go down by one.
/// 6. With `ramping`, while the spawn or the move interval is above 1: a
///    ramp countdown starting at 100 goes down by one each step; the step
///    after it passes below 0, the spawn interval drops by 1 (while above 1),
///    on every other ramp (the 2nd, 4th, ...) the move interval too, and the
///    countdown restarts at 100.
///
/// Start: player at (row 5, column 5), lanes empty, countdowns at their
/// intervals.
///
/// Channels: 0 player, 1 enemy, 2 trail (the cell each object left), 3 gold.
/// Minimal actions: no-op, left, up, right, down.
///
/// Random policy (sticky 0.1, ramping, 10,000 episodes): return 0.52,
/// 71 steps (BENCHMARKS.md). MinAtar's published results at 5M frames (moving average of 100
/// episodes, 30 runs): DQN about 17, AC(0) about 20 (Young & Tian 2019; the learning curves
/// in MinAtar's README).

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "coral/envs/minatar.hpp"

namespace coral::envs::minatar {

/// Asterix's state and rules.
class asterix {
 public:
  /// Registry name.
  static constexpr std::string_view name = "minatar/asterix";
  /// One-line description.
  static constexpr std::string_view description =
      "MinAtar Asterix (Young & Tian 2019): channels player, enemy, trail, gold; random policy 0.52 return, "
      "71 steps; published DQN about 17, AC(0) about 20 at 5M frames";
  /// Number of observation channels.
  static constexpr std::size_t channels = 4;
  /// The minimal action set.
  static constexpr std::array<action, 5> minimal_actions{action::noop, action::left, action::up, action::right,
                                                         action::down};
  /// Config keys besides the common ones: ramping.
  [[nodiscard]] static std::vector<config_key> game_keys() { return {ramping_key()}; }

  static constexpr int lanes = 8;              ///< lanes, rows 1–8
  static constexpr int spawn_interval = 10;    ///< steps between spawns at the start
  static constexpr int move_interval = 5;      ///< steps between object moves at the start
  static constexpr int ramp_interval = 100;    ///< the ramp countdown's start

  /// An object in a lane (its row is the lane + 1).
  struct object {
    bool present = false;
    int x = 0;
    bool heading_right = false;
    bool gold = false;
  };

  /// The whole game state.
  struct state {
    int player_x = 5, player_y = 5;
    std::array<object, lanes> lane{};
    int spawn_interval = asterix::spawn_interval;
    int spawn_countdown = asterix::spawn_interval;
    int move_interval = asterix::move_interval;
    int move_countdown = asterix::move_interval;
    int ramp_countdown = ramp_interval;
    int ramps = 0;                           ///< ramps so far (MinAtar's difficulty level)
  };

  /// Builds the game from its config (`ramping`).
  explicit asterix(const env_config& config);

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

 private:
  void spawn(rng& r) noexcept;
  void meet(object& o, step_result& out) const noexcept;

  state state_;
  bool ramping_;
};

}  // namespace coral::envs::minatar

namespace coral::envs {
extern template class minatar_env<minatar::asterix>;
/// The `minatar/asterix` env.
using minatar_asterix = minatar_env<minatar::asterix>;
}  // namespace coral::envs
