#pragma once
/// \file
/// `memory`: recite a sequence of bits after a delay. Catches a recurrent
/// policy whose state is not carried (or not reset) across steps, and
/// observations written to the wrong step.
///
/// An episode has 2·length + delay steps. With observation o_t shown before
/// action a_t (o_0 comes from reset):
/// - t < length: o_t = (±1, 0), bit t of a random sequence (+1 for 1, −1 for 0);
/// - length ≤ t < length + delay: o_t = (0, 0);
/// - t ≥ length + delay: o_t = (0, 1), "recite now".
/// Actions are Discrete(2). Action a_t with t = length + delay + j earns
/// 1/length if it equals bit j; every other action earns 0. The step that
/// takes a_{2·length+delay−1} ends the episode, terminated. The bits are drawn
/// from the env's rng at every reset.
///
/// Observation Box((2,), -1, 1). Optimal return per episode: 1 (recite every
/// bit); a policy without memory gets 0.5 in expectation. Solved at 0.95.

#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/core/rng.hpp"

namespace coral::envs {

/// Remember bits, then recite them.
class memory final : public env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "memory";
  /// One-line description.
  static constexpr std::string_view description = "recite a sequence of bits after a delay (tests recurrent memory)";
  /// Config keys: length, delay.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// Builds the env from its config and seed.
  memory(const env_config& config, env_seed seed);

  void reset(const env_rows& rows) override;
  void step(const env_rows& rows) override;
  [[nodiscard]] const space& observation_space() const noexcept override { return observation_space_; }
  [[nodiscard]] const space& action_space() const noexcept override { return action_space_; }
  [[nodiscard]] std::optional<double> optimal_return() const noexcept override { return 1.0; }
  [[nodiscard]] std::optional<double> solved_return() const noexcept override { return 0.95; }

  /// Bit i of the current episode's sequence (0 or 1).
  [[nodiscard]] int bit(std::size_t i) const noexcept { return static_cast<int>((bits_ >> i) & 1U); }

 private:
  void write_observation(const env_rows& rows) const noexcept;

  space observation_space_;
  space action_space_;
  rng rng_;
  std::int64_t length_;
  std::int64_t delay_;
  std::uint64_t bits_ = 0;
  std::int64_t t_ = 0;  // index of the next action
};

}  // namespace coral::envs
