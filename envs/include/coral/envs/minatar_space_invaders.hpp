#pragma once
/// \file
/// `minatar/space_invaders`: MinAtar's Space Invaders (common rules in
/// minatar.hpp).
///
/// The player's cannon moves along the bottom row under a block of aliens
/// that sweeps left and right and descends; both sides shoot.
///
/// Rules, per step, in this order:
/// 1. The cannon fires (when the shot cooldown is at 0; it restarts at 5: a
///    bullet on the cannon's cell), or moves one cell left or right (clamped).
/// 2. The player's bullets move up one row (those in row 0 are gone), the
///    aliens' bullets down one row (those in row 9 are gone).
/// 3. An alien bullet or an alien on the cannon's cell ends the game.
/// 4. When the alien move countdown is at 0, it restarts at the smaller of
///    the number of aliens and the alien move interval (12 at the start: the
///    last few aliens speed up, the last one moves every step), and the block
///    moves: if an alien is in the edge column it is heading to, it turns
///    around and moves down one row instead (the game ends if an alien was on
///    the bottom row; the rows wrap around, as in MinAtar), else it moves one
///    column. An alien landing on the cannon ends the game.
/// 5. When the alien shot countdown is at 0, it restarts at 10 and the
///    lowest alien of the column nearest the cannon (the left one of two at
///    the same distance) fires: a bullet on its cell.
/// 6. A player's bullet on an alien's cell: both are gone, +1 each.
/// 7. The shot cooldown goes down by one (not below 0), the alien move and
///    shot countdowns by one.
/// 8. When no alien is left, a new block appears and, with `ramping`, while
///    the alien move interval is above 6 it drops by 1.
///
/// Start: cannon at column 5; aliens fill rows 0–3, columns 2–7, heading
/// left; alien move countdown 12, shot countdown 10, shot cooldown 0.
///
/// Channels: 0 cannon, 1 alien, 2 alien heading left, 3 alien heading right
/// (every alien is in one of 2 and 3, by the block's heading), 4 player
/// bullet, 5 alien bullet. Minimal actions: no-op, left, right, fire.
///
/// Random policy (sticky 0.1, ramping, 10,000 episodes): return 2.86,
/// 52 steps (BENCHMARKS.md). MinAtar's published results at 5M frames (moving average of 100
/// episodes, 30 runs): DQN about 43, AC(0.8) about 185 (Young & Tian 2019; the learning curves
/// in MinAtar's README).

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "coral/envs/minatar.hpp"

namespace coral::envs::minatar {

/// Space Invaders' state and rules.
class space_invaders {
 public:
  /// Registry name.
  static constexpr std::string_view name = "minatar/space_invaders";
  /// One-line description.
  static constexpr std::string_view description =
      "MinAtar Space Invaders (Young & Tian 2019): channels cannon, alien, alien heading left, alien heading right, "
      "bullet, alien bullet; random policy 2.86 return, 52 steps; "
      "published DQN about 43, AC(0.8) about 185 at 5M frames";
  /// Number of observation channels.
  static constexpr std::size_t channels = 6;
  /// The minimal action set.
  static constexpr std::array<action, 4> minimal_actions{action::noop, action::left, action::right, action::fire};
  /// Config keys besides the common ones: ramping.
  [[nodiscard]] static std::vector<config_key> game_keys() { return {ramping_key()}; }

  static constexpr int shot_cooldown = 5;
  static constexpr int alien_move_interval = 12;  ///< at the start
  static constexpr int alien_shot_interval = 10;
  static constexpr int fastest_move_interval = 6; ///< the ramp stops here

  /// A 10 × 10 layer of bits: per row, bit x set for column x.
  using layer = std::array<std::uint16_t, grid_size>;

  /// The whole game state.
  struct state {
    int cannon = 5;
    layer aliens{};
    layer bullets{};
    layer alien_bullets{};
    int alien_heading = -1;  ///< -1 left, +1 right
    int alien_move_interval = space_invaders::alien_move_interval;
    int alien_move_countdown = space_invaders::alien_move_interval;
    int alien_shot_countdown = alien_shot_interval;
    int shot_cooldown = 0;
    int ramps = 0;  ///< ramps so far (MinAtar's difficulty level)
  };

  /// Builds the game from its config (`ramping`).
  explicit space_invaders(const env_config& config);

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

  /// The block of a new wave: rows 0–3, columns 2–7.
  [[nodiscard]] static layer new_wave() noexcept;

 private:
  state state_;
  bool ramping_;
};

}  // namespace coral::envs::minatar

namespace coral::envs {
extern template class minatar_env<minatar::space_invaders>;
/// The `minatar/space_invaders` env.
using minatar_space_invaders = minatar_env<minatar::space_invaders>;
}  // namespace coral::envs
