#pragma once
/// \file
/// `minatar/<game>`: the five games of MinAtar (Young & Tian 2019,
/// "MinAtar: An Atari-Inspired Testbed for Thorough and Reproducible
/// Reinforcement Learning Experiments", arXiv:1903.03176), written for coral
/// from the paper's and the MinAtar README's rules. This header holds what
/// the five share: the action set, sticky actions, the observation layout and
/// the env that wraps a game; each game is in its own header
/// (minatar_asterix.hpp, minatar_breakout.hpp, minatar_freeway.hpp,
/// minatar_seaquest.hpp, minatar_space_invaders.hpp).
///
/// - Observation Box((10, 10, n), 0, 1): a 10 × 10 grid (row y from the top,
///   column x from the left) of n object channels, each cell 0 or 1, row-major
///   with the channel last, as MinAtar's state: element (y · 10 + x) · n + c.
///   coral's batch rows are float, so the bits travel as 0.0 / 1.0.
/// - Action Discrete(6), MinAtar's full set: 0 no-op, 1 left, 2 up, 3 right,
///   4 down, 5 fire (actions a game does not use act as no-ops). With
///   `minimal_actions`=true the space is Discrete(k) over the game's own
///   subset, in the order of the full set (each game's header lists it).
/// - Sticky actions: before each step, with probability `sticky_action_prob`
///   (0.1) the action taken is the previous step's instead of the chosen one.
///   As in MinAtar, the previous action starts as the no-op when the env is
///   made and carries over from one episode to the next.
/// - `ramping` (true; Asterix, Seaquest, Space Invaders): the game's
///   difficulty ramp. Breakout and Freeway have none.
/// - Reward: the game's points for the step. `terminated` when the game is
///   over; Freeway's time limit sets `truncated` instead.
///
/// - render(): a 160 × 160 frame, each cell a 16 × 16 square in the colour
///   of the highest-numbered channel set there (minatar::channel_colours, in
///   channel order), black where none is.
///
/// Optimal and solved returns: none (a good agent's score has no fixed
/// ceiling). Each game's header gives its random-policy return and episode
/// length and MinAtar's published learning results.
///
/// Thread safety: as for every env, one thread at a time.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/core/rng.hpp"

namespace coral::envs::minatar {

/// Side of the square grid, in cells.
inline constexpr int grid_size = 10;
/// A row of the grid as bits, every cell set.
inline constexpr std::uint16_t full_row = (1U << grid_size) - 1;

/// MinAtar's full action set, in its order.
enum class action : std::int32_t { noop = 0, left = 1, up = 2, right = 3, down = 4, fire = 5 };

/// Pixels per cell side in render()'s frames.
inline constexpr int cell_pixels = 16;

/// The colour of each channel in render()'s frames, channel 0 first, as
/// 0xRRGGBB (the games have at most 10 channels).
inline constexpr std::array<std::uint32_t, 10> channel_colours{0x4e79a7, 0xf28e2b, 0x76b7b2, 0xe15759, 0x59a14f,
                                                               0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac};

/// Number of actions in the full set.
inline constexpr std::int32_t full_action_count = 6;

/// What one step of a game produced.
struct step_result {
  float reward = 0;          ///< points scored this step
  bool terminated = false;   ///< the game is over
  bool truncated = false;    ///< a time limit cut the game short (Freeway)
};

/// Sets cell (y, x) of channel c in an observation row of `channels`
/// channels. Cells off the grid are ignored.
inline void mark(float* observation, std::size_t channels, int y, int x, std::size_t c) noexcept {
  if (y < 0 || y >= grid_size || x < 0 || x >= grid_size) return;
  observation[(static_cast<std::size_t>(y) * grid_size + static_cast<std::size_t>(x)) * channels + c] = 1.0F;
}

/// The config keys every MinAtar game takes: sticky_action_prob, minimal_actions.
[[nodiscard]] std::vector<config_key> common_keys();

/// The `ramping` key of the games that ramp their difficulty.
[[nodiscard]] config_key ramping_key();

}  // namespace coral::envs::minatar

namespace coral::envs {

/// A MinAtar game as a coral env: sticky actions, the action set, the
/// observation row. `Game` is one of the game classes of the minatar
/// headers: it holds the game's state and rules, and this class holds what
/// is common.
template <class Game>
class minatar_env final : public env {
 public:
  /// Registry name (`minatar/breakout`, ...).
  static constexpr std::string_view name = Game::name;
  /// One-line description: channels, random-policy figures, published results.
  static constexpr std::string_view description = Game::description;
  /// Config keys: sticky_action_prob, minimal_actions, then the game's own.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed.
  minatar_env(const env_config& config, env_seed seed);

  void reset(const env_rows& rows) override;
  void step(const env_rows& rows) override;
  [[nodiscard]] const space& observation_space() const noexcept override { return observation_space_; }
  [[nodiscard]] const space& action_space() const noexcept override { return action_space_; }
  /// Draws the grid (see the file comment).
  [[nodiscard]] bool render(rgb_frame& frame) const override;

  /// The game (for tests: set its state, read it back).
  [[nodiscard]] Game& game() noexcept { return game_; }
  /// The game, read-only.
  [[nodiscard]] const Game& game() const noexcept { return game_; }

  /// The action the game took on the last step (after sticky actions): the
  /// one a sticky step repeats.
  [[nodiscard]] minatar::action last_action() const noexcept { return last_action_; }

 private:
  void write_observation(const env_rows& rows) const noexcept;

  Game game_;
  space observation_space_;
  space action_space_;
  rng rng_;
  double sticky_action_prob_;
  bool minimal_actions_;
  minatar::action last_action_ = minatar::action::noop;
};

}  // namespace coral::envs
