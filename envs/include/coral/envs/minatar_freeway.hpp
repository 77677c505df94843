#pragma once
/// \file
/// `minatar/freeway`: MinAtar's Freeway (common rules in minatar.hpp).
///
/// The chicken walks up column 4 from the bottom row; eight cars, one per
/// lane (rows 1–8), drive across and wrap around at the edges.
///
/// Rules, per step, in this order:
/// 1. Up or down moves the chicken one row (clamped to rows 0–9) when its
///    move countdown is at 0, which then restarts at 3: the chicken moves at
///    most once every 3 steps.
/// 2. A chicken in row 0 scores +1, goes back to row 9 and every car gets a
///    new speed (positions are kept).
/// 3. Each car in turn: if it is on the chicken's cell, the chicken goes back
///    to row 9. Its countdown at 0: it restarts at the car's period and the
///    car moves one cell in its direction (wrapping around), sending the
///    chicken back to row 9 if it lands on it; else the countdown goes down
///    by one.
/// 4. The chicken's move countdown goes down by one (not below 0), and the
///    time limit's countdown by one: when it passes below 0 the episode is
///    truncated. With `time_limit`=2500 (MinAtar's) that is on the 2,501st step.
///
/// A car's speed: a period of 1–5 steps per move (uniform) and a direction
/// (a fair coin). Start: chicken in row 9 with its move countdown at 3, every
/// car in column 0 with a new speed and its countdown at its period. No
/// difficulty ramp.
///
/// Channels: 0 chicken, 1 car, 2–6 the trail of a car of period 1–5 (the
/// cell behind the car, wrapping around, shows its direction).
/// Minimal actions: no-op, up, down.
///
/// Random policy (sticky 0.1, 10,000 episodes): return 0.13, 2,501 steps
/// (BENCHMARKS.md). MinAtar's published results at 5M frames (moving average of 100
/// episodes, 30 runs): DQN about 50, AC(0.8) about 47 (Young & Tian 2019; the learning curves
/// in MinAtar's README).

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "coral/envs/minatar.hpp"

namespace coral::envs::minatar {

/// Freeway's state and rules.
class freeway {
 public:
  /// Registry name.
  static constexpr std::string_view name = "minatar/freeway";
  /// One-line description.
  static constexpr std::string_view description =
      "MinAtar Freeway (Young & Tian 2019): channels chicken, car, trail of a car of period 1..5; random policy 0.13 "
      "return, 2501 steps (time limit); published DQN about 50, AC(0.8) about 47 at 5M frames";
  /// Number of observation channels.
  static constexpr std::size_t channels = 7;
  /// The minimal action set.
  static constexpr std::array<action, 3> minimal_actions{action::noop, action::up, action::down};
  /// Config keys besides the common ones: time_limit.
  [[nodiscard]] static std::vector<config_key> game_keys();

  static constexpr int lanes = 8;          ///< car lanes, rows 1–8
  static constexpr int chicken_column = 4; ///< the column the chicken walks up
  static constexpr int chicken_period = 3; ///< steps between the chicken's moves

  /// A car (its row is its lane + 1).
  struct car {
    int x = 0;
    int countdown = 1;  ///< steps until its next move
    int velocity = 1;   ///< ±period: sign is the direction (+ right), magnitude the steps per move (1–5)
  };

  /// The whole game state.
  struct state {
    int chicken_y = grid_size - 1;
    int move_countdown = chicken_period;
    int time_left = 2500;  ///< the time limit's countdown
    std::array<car, lanes> cars{};
  };

  /// Builds the game from its config (`time_limit`).
  explicit freeway(const env_config& config);

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
  void new_speeds(rng& r) noexcept;

  state state_;
  int time_limit_;
};

}  // namespace coral::envs::minatar

namespace coral::envs {
extern template class minatar_env<minatar::freeway>;
/// The `minatar/freeway` env.
using minatar_freeway = minatar_env<minatar::freeway>;
}  // namespace coral::envs
