#pragma once
/// \file
/// `cartpole`: the classic control task (Barto, Sutton and Anderson 1983),
/// with Gymnasium CartPole-v1's dynamics, constants and episode rules.
///
/// - State (x, x_dot, theta, theta_dot), held in double; the observation is
///   the state as four floats. Box bounds: x in ±4.8, theta in ±24° (both
///   twice the termination thresholds), velocities unbounded.
/// - With `velocities = false` (POPGym's "stateless cartpole") the
///   observation is Box((2,)) = (x, theta) only, same bounds; dynamics,
///   reward, termination and truncation are unchanged. The velocities can
///   then only be recovered from earlier observations (a recurrent state, or
///   at least two stacked frames): a memoryless policy sees where the pole
///   is, not where it is going, and cannot balance it (pushing toward the
///   lean lasts about 43 steps on average; the best linear rules on (x, θ)
///   a random search found, about 50). The target for recurrent agents
///   (issue 12) is a mean return of at least 450 within 1,000,000 env
///   steps; optimum and solved return are cartpole's.
/// - Action Discrete(2): 0 pushes the cart left with 10 N, 1 right.
/// - Dynamics: gravity 9.8, cart mass 1.0 kg, pole mass 0.1 kg, pole
///   half-length 0.5 m, force 10 N, tau 0.02 s, explicit Euler:
///   ```
///   temp      = (force + m_p l theta_dot² sin θ) / (m_c + m_p)
///   theta_acc = (g sin θ − cos θ · temp) / (l (4/3 − m_p cos² θ / (m_c + m_p)))
///   x_acc     = temp − m_p l theta_acc cos θ / (m_c + m_p)
///   x += tau x_dot; x_dot += tau x_acc; θ += tau theta_dot; theta_dot += tau theta_acc
///   ```
/// - Reset: each state variable uniform in [-0.05, 0.05].
/// - Reward 1 on every step, the terminating step included.
/// - terminated when |x| > 2.4 or |θ| > 12° (after the step); truncated when
///   the episode reaches `max_steps` steps (default 500). Both may be set.
///
/// - render(): a 400 × 600 frame (height × width): the track, the cart and
///   the pole, 125 pixels per metre (the frame spans ±2.4 m, where an
///   episode terminates), the pole drawn at its full length (2 half-lengths).
///
/// Optimal return per episode: max_steps (500). Solved at a mean return of
/// 475 (Gymnasium's reward threshold), or 0.95 × max_steps if that is changed.

#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/core/rng.hpp"

namespace coral::envs {

/// The cart-pole balancing task.
class cartpole final : public env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "cartpole";
  /// One-line description.
  static constexpr std::string_view description = "balance a pole on a cart (Gymnasium CartPole-v1 dynamics)";
  /// Config keys: max_steps, velocities.
  [[nodiscard]] static std::vector<config_key> config_keys();

  static constexpr double gravity = 9.8;             ///< m/s²
  static constexpr double mass_cart = 1.0;           ///< kg
  static constexpr double mass_pole = 0.1;           ///< kg
  static constexpr double half_length = 0.5;         ///< m, pole half-length
  static constexpr double force_mag = 10.0;          ///< N
  static constexpr double tau = 0.02;                ///< s per step
  static constexpr double theta_threshold = 12.0 * 2.0 * 3.14159265358979323846 / 360.0;  ///< rad
  static constexpr double x_threshold = 2.4;         ///< m

  /// The physical state.
  struct state {
    double x = 0, x_dot = 0, theta = 0, theta_dot = 0;
  };

  /// Builds the env from its config and seed.
  cartpole(const env_config& config, env_seed seed);

  void reset(const env_rows& rows) override;
  void step(const env_rows& rows) override;
  [[nodiscard]] const space& observation_space() const noexcept override { return observation_space_; }
  [[nodiscard]] const space& action_space() const noexcept override { return action_space_; }
  [[nodiscard]] std::optional<double> optimal_return() const noexcept override;
  [[nodiscard]] std::optional<double> solved_return() const noexcept override;
  /// Draws the cart and pole (see the file comment).
  [[nodiscard]] bool render(rgb_frame& frame) const override;

  static constexpr std::size_t frame_height = 400;  ///< render() frame rows
  static constexpr std::size_t frame_width = 600;   ///< render() frame columns

  /// The current state (for tests and debugging).
  [[nodiscard]] const state& current() const noexcept { return state_; }
  /// Replaces the state and restarts the step count (for tests: known trajectories).
  void set_state(const state& s) noexcept {
    state_ = s;
    steps_ = 0;
  }

  /// One Euler step of the dynamics from `s` with `action` (0 left, 1 right).
  [[nodiscard]] static state advance(const state& s, int action) noexcept;

 private:
  void write_observation(const env_rows& rows) const noexcept;

  space observation_space_;
  space action_space_;
  rng rng_;
  state state_;
  std::int64_t steps_ = 0;
  std::int64_t max_steps_;
  bool velocities_;
};

}  // namespace coral::envs
