#pragma once
/// \file
/// `minatar/seaquest`: MinAtar's Seaquest (common rules in minatar.hpp).
///
/// The player's submarine (a front and a back cell, so its heading shows)
/// moves in rows 0–8 (row 0 is the surface); enemy fish and submarines and
/// divers cross rows 1–8 from one side to the other. Enemy submarines shoot.
///
/// Rules, per step, in this order:
/// 1. Spawning: when the enemy countdown is at 0, an enemy enters a row
///    drawn uniformly from 1–8, from the left heading right or from the right
///    heading left (a fair coin), a submarine with probability 1/3 else a
///    fish, unless that row holds an enemy heading the other way; the
///    countdown restarts at the enemy spawn interval (20). When the diver
///    countdown is at 0, a diver enters the same way (any row 1–8) and the
///    countdown restarts at 30.
/// 2. The player fires (when the shot cooldown is at 0; it restarts at 5: a
///    bullet on the submarine's cell, heading its way), or moves one cell
///    (left and right also turn it; clamped to columns 0–9, rows 0–8).
/// 3. Each of the player's bullets, newest first, moves one cell; off the grid
///    it is gone; on an enemy (fish first, then submarines, oldest first) both
///    are gone and the player scores +1.
/// 4. Each diver, newest first: on the player's cell with fewer than 6 divers
///    aboard, it is picked up; else it moves one cell every 6 steps (its
///    countdown restarts at 5), leaves at the edge, and is picked up if it
///    lands on the player.
/// 5. Each enemy submarine, newest first: on the player's cell, the game
///    ends; it moves every move interval + 1 steps (5 + 1 at the start),
///    leaves at the edge, ends the game if it lands on the player, and is
///    sunk (+1) if it lands on one of the player's bullets (that bullet is
///    gone). Every 11 steps it fires a bullet heading its way from its cell
///    (also on the step it left or sank).
/// 6. Each enemy bullet, newest first: on the player's cell it ends the game;
///    it moves one cell, leaves at the edge, and ends the game if it lands on
///    the player.
/// 7. Each fish, newest first: as the submarines in 5, without shooting.
/// 8. The spawn countdowns and the shot cooldown go down by one (not below 0).
/// 9. Oxygen (200 at the start): if it is at 0 or below, the game ends. Below
///    the surface it goes down by 1. Arriving at the surface: with no diver
///    aboard the game ends; with 6, they all leave and the player scores
///    oxygen · 10 / 200 (integer division), then the diver count goes down by
///    one (also after 6, as in MinAtar: the count is then −1 and the next
///    surfacing is free); with fewer, one diver leaves. The oxygen refills to
///    200 and, with `ramping`, while the enemy spawn interval is above 1 or
///    the move interval above 2: on every other surfacing (the 2nd, 4th, ...)
///    the move interval drops by 1 (while above 2), and the spawn interval by
///    1 (while above 1).
///
/// Start: submarine at the surface, column 5, heading left; oxygen 200; no
/// divers aboard; no objects; enemy countdown 20, diver countdown 30; the
/// player counts as surfaced (diving then surfacing again needs a diver).
///
/// Channels: 0 submarine front, 1 submarine back, 2 player bullet, 3 trail
/// (the cell each fish, enemy submarine and diver left), 4 enemy bullet,
/// 5 enemy fish, 6 enemy submarine, 7 oxygen gauge (row 9, columns
/// 0 .. oxygen · 10 / 200 − 1), 8 diver gauge (row 9, columns 9 − divers .. 8),
/// 9 diver. Minimal actions: all six.
///
/// Random policy (sticky 0.1, ramping, 10,000 episodes): return 0.09,
/// 30 steps (BENCHMARKS.md). MinAtar's published results at 5M frames (moving average of 100
/// episodes, 30 runs): DQN about 20, AC(0.8) about 15 with MinAtar before 1.0.11, whose
/// oxygen gauge flashed full just before running out; later versions, and
/// this one, do not (Young & Tian 2019; the learning curves
/// in MinAtar's README).

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "coral/envs/minatar.hpp"

namespace coral::envs::minatar {

/// Seaquest's state and rules.
class seaquest {
 public:
  /// Registry name.
  static constexpr std::string_view name = "minatar/seaquest";
  /// One-line description.
  static constexpr std::string_view description =
      "MinAtar Seaquest (Young & Tian 2019): channels sub front, sub back, bullet, trail, enemy bullet, fish, enemy "
      "sub, oxygen, divers aboard, diver; random policy 0.09 return, 30 steps; "
      "published DQN about 20, AC(0.8) about 15 at 5M frames";
  /// Number of observation channels.
  static constexpr std::size_t channels = 10;
  /// The minimal action set: all six.
  static constexpr std::array<action, 6> minimal_actions{action::noop,  action::left, action::up,
                                                         action::right, action::down, action::fire};
  /// Config keys besides the common ones: ramping.
  [[nodiscard]] static std::vector<config_key> game_keys() { return {ramping_key()}; }

  static constexpr int max_oxygen = 200;
  static constexpr int enemy_spawn_interval = 20;  ///< at the start
  static constexpr int diver_spawn_interval = 30;
  static constexpr int move_interval = 5;          ///< enemy move countdown's start, at the start
  static constexpr int shot_cooldown = 5;
  static constexpr int enemy_shot_interval = 10;
  static constexpr int diver_move_interval = 5;
  static constexpr int max_divers = 6;
  /// Objects of one kind the state holds without allocating (more still work, allocating).
  static constexpr std::size_t reserved_objects = 64;

  /// A bullet (the player's or an enemy's).
  struct bullet {
    int x = 0, y = 0;
    bool heading_right = false;
  };
  /// A fish, an enemy submarine or a diver.
  struct swimmer {
    int x = 0, y = 0;
    bool heading_right = false;
    int move_countdown = 0;
    int shot_countdown = 0;  ///< enemy submarines only
  };

  /// The whole game state. Lists are oldest first.
  struct state {
    int sub_x = 5, sub_y = 0;
    bool sub_heading_right = false;
    int oxygen = max_oxygen;
    int divers_aboard = 0;
    bool surfaced = true;  ///< at the surface since the last surfacing
    int shot_cooldown = 0;
    int enemy_spawn_interval = seaquest::enemy_spawn_interval;
    int enemy_spawn_countdown = seaquest::enemy_spawn_interval;
    int diver_spawn_countdown = diver_spawn_interval;
    int move_interval = seaquest::move_interval;
    int ramps = 0;  ///< ramps so far (MinAtar's difficulty level)
    std::vector<bullet> bullets;
    std::vector<bullet> enemy_bullets;
    std::vector<swimmer> fish;
    std::vector<swimmer> subs;
    std::vector<swimmer> divers;
  };

  /// Builds the game from its config (`ramping`).
  explicit seaquest(const env_config& config);

  /// Starts a new game.
  void reset(rng& r) noexcept;
  /// One step with action `a`.
  step_result step(action a, rng& r);
  /// Sets the channels of the current state in a zeroed observation row.
  void draw(float* observation) const noexcept;

  /// The current state.
  [[nodiscard]] const state& current() const noexcept { return state_; }
  /// Replaces the state (for tests).
  void set_state(const state& s) { state_ = s; }

 private:
  void spawn_enemy(rng& r);
  void spawn_diver(rng& r);
  [[nodiscard]] bool on_sub(int x, int y) const noexcept { return x == state_.sub_x && y == state_.sub_y; }
  float surface() noexcept;

  state state_;
  bool ramping_;
};

}  // namespace coral::envs::minatar

namespace coral::envs {
extern template class minatar_env<minatar::seaquest>;
/// The `minatar/seaquest` env.
using minatar_seaquest = minatar_env<minatar::seaquest>;
}  // namespace coral::envs
