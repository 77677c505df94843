#pragma once
/// \file
/// `squared`: move to targets that spawn on the edge of a square. Catches
/// observation/action mix-ups (the policy must map relative target positions
/// to moves) and reward bookkeeping (only first hits pay).
///
/// A `size` × `size` grid; the agent starts in the centre cell
/// (size/2, size/2). At reset, `targets` distinct cells are drawn uniformly
/// from the edge ring (cells with a coordinate equal to 0 or size − 1).
/// Actions Discrete(5): 0 stay, 1 up (y + 1), 2 down (y − 1), 3 left (x − 1),
/// 4 right (x + 1); moves off the grid are clamped. The first time the agent
/// stands on a target it earns 1/targets; later visits earn nothing. The
/// episode ends terminated when every target has been hit, truncated after
/// `max_steps` steps.
///
/// Observation Box((2 + 3·targets,), -1, 1): the agent's (x, y) scaled to
/// [-1, 1] by 2c/(size − 1) − 1, then per target its offset from the agent
/// ((tx − x)/(size − 1), (ty − y)/(size − 1)) and 1 if already hit, else 0.
///
/// Optimal return per episode: 1 whenever max_steps ≥ 4.5 (size − 1) (walk
/// to the edge, then around it; the defaults allow it). Solved at 0.95.

#include <string_view>
#include <vector>

#include "coral/envs/config.hpp"
#include "coral/envs/env.hpp"
#include "coral/core/rng.hpp"

namespace coral::envs {

/// Visit targets on the edge of a grid.
class squared final : public env {
 public:
  /// Registry name.
  static constexpr std::string_view name = "squared";
  /// One-line description.
  static constexpr std::string_view description =
      "move to targets on the edge of a square grid; each first hit pays 1/targets";
  /// Config keys: size, targets, max_steps.
  [[nodiscard]] static std::vector<config_key> config_keys();

  /// A grid cell.
  struct cell {
    std::int32_t x = 0, y = 0;
    friend bool operator==(const cell&, const cell&) = default;
  };

  /// Builds the env from its config and seed. Rejects (config_error naming
  /// `targets`) more targets than the edge has cells.
  squared(const env_config& config, env_seed seed);

  void reset(const env_rows& rows) override;
  void step(const env_rows& rows) override;
  [[nodiscard]] const space& observation_space() const noexcept override { return observation_space_; }
  [[nodiscard]] const space& action_space() const noexcept override { return action_space_; }
  [[nodiscard]] std::optional<double> optimal_return() const noexcept override { return 1.0; }
  [[nodiscard]] std::optional<double> solved_return() const noexcept override { return 0.95; }

  /// The agent's cell.
  [[nodiscard]] cell agent() const noexcept { return agent_; }
  /// The targets of this episode.
  [[nodiscard]] const std::vector<cell>& targets() const noexcept { return targets_; }

 private:
  void write_observation(const env_rows& rows) const noexcept;

  space observation_space_;
  space action_space_;
  rng rng_;
  std::int32_t size_;
  std::int64_t max_steps_;
  cell agent_;
  std::vector<cell> targets_;
  std::vector<std::uint8_t> hit_;
  std::int64_t steps_ = 0;
  std::int64_t hits_ = 0;
};

}  // namespace coral::envs
