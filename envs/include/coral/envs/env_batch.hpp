#pragma once
/// \file
/// `env_batch`: the pre-allocated struct-of-arrays buffer that envs write
/// into and the inference batcher reads from.
///
/// One row per agent slot (one per env for single-agent envs). The rows of
/// one env are consecutive, and the envs of one env_slice own consecutive
/// ranges, so a group of K envs owns one contiguous block of every array.
///
/// Per row:
///
/// | array                | type    | width                        | written by |
/// |----------------------|---------|------------------------------|------------|
/// | observations         | float   | obs_dim (flat obs space)     | env        |
/// | discrete_actions     | int32   | discrete_action_dim          | batcher    |
/// | continuous_actions   | float   | continuous_action_dim        | batcher    |
/// | rewards              | float   | 1                            | env        |
/// | terminated           | uint8   | 1                            | env        |
/// | truncated            | uint8   | 1                            | env        |
/// | active               | uint8   | 1                            | env        |
/// | action_masks         | uint8   | mask_dim (action_mask_size)  | env (1s if it does not mask) |
/// | teams                | int32   | 1                            | env_slice, once (env::team_of) |
/// | final_observations   | float   | obs_dim                      | env_slice  |
/// | episode_returns      | float   | 1                            | env_slice  |
/// | episode_lengths      | int32   | 1                            | env_slice  |
/// | failed               | uint8   | 1                            | env_slice, env group |
/// | commands             | uint8   | 1                            | driver, env_slice |
///
/// The action layout is space.hpp's: Discrete/MultiDiscrete components go to
/// the int32 part, Box elements to the float part, in leaf order. See
/// env_slice.hpp for what final_observations and the episode columns hold.
///
/// Thread safety: as for slab: distinct rows may be used by distinct threads;
/// the hand-over of rows is the caller's protocol.

#include <cstddef>
#include <cstdint>
#include <span>

#include "coral/core/slab.hpp"
#include "coral/envs/env.hpp"
#include "coral/envs/space.hpp"

namespace coral::envs {

/// What env_slice::step_all() does with an env, read from the commands()
/// column at the env's first row (bits; 0 is a plain step).
namespace row_command {
/// Step the env as usual.
inline constexpr std::uint8_t step = 0;
/// Start a new episode instead of stepping: the action is ignored, the rows
/// get the first observation, reward 0, flags 0, episode columns 0.
inline constexpr std::uint8_t reset = 1;
/// Leave the env and its rows as they are for this step (a partial reset
/// holds the envs it does not reset). A pending reset bit stays for the
/// next step.
inline constexpr std::uint8_t hold = 2;
}  // namespace row_command

/// The batch buffer. Allocates in its constructor only.
class env_batch {
 public:
  /// A batch of `rows` rows for envs with these spaces.
  env_batch(std::size_t rows, const space& observation_space, const space& action_space);

  /// A batch of `rows` rows with explicit widths (`mask_dim`: the width of
  /// an action-mask row, envs::action_mask_size() of the action space).
  env_batch(std::size_t rows, std::size_t obs_dim, std::size_t discrete_action_dim,
            std::size_t continuous_action_dim, std::size_t mask_dim = 0);

  /// Number of rows.
  [[nodiscard]] std::size_t rows() const noexcept { return rows_; }
  /// Width of an observation row.
  [[nodiscard]] std::size_t obs_dim() const noexcept { return obs_dim_; }
  /// Width of the int32 part of an action row.
  [[nodiscard]] std::size_t discrete_action_dim() const noexcept { return discrete_dim_; }
  /// Width of the float part of an action row.
  [[nodiscard]] std::size_t continuous_action_dim() const noexcept { return continuous_dim_; }
  /// Width of an action-mask row (bytes); see env.hpp, "Action masks".
  [[nodiscard]] std::size_t action_mask_dim() const noexcept { return mask_dim_; }
  /// True once an env bound to this batch declared an action mask
  /// (env::action_mask_size() != 0): only then can a mask row hold a 0.
  /// Set when the envs are bound (env_slice's constructor), before any step.
  [[nodiscard]] bool has_action_masks() const noexcept { return has_masks_; }
  /// Marks the batch as masked; called by env_slice.
  void declare_action_masks() noexcept { has_masks_ = true; }

  /// Observations, rows × obs_dim.
  [[nodiscard]] slab<float>& observations() noexcept { return observations_; }
  /// Observations, rows × obs_dim.
  [[nodiscard]] const slab<float>& observations() const noexcept { return observations_; }
  /// Final observations of ended episodes, rows × obs_dim.
  [[nodiscard]] slab<float>& final_observations() noexcept { return final_observations_; }
  /// Final observations of ended episodes, rows × obs_dim.
  [[nodiscard]] const slab<float>& final_observations() const noexcept { return final_observations_; }
  /// Int32 part of the actions, rows × discrete_action_dim.
  [[nodiscard]] slab<std::int32_t>& discrete_actions() noexcept { return discrete_actions_; }
  /// Int32 part of the actions, rows × discrete_action_dim.
  [[nodiscard]] const slab<std::int32_t>& discrete_actions() const noexcept { return discrete_actions_; }
  /// Float part of the actions, rows × continuous_action_dim.
  [[nodiscard]] slab<float>& continuous_actions() noexcept { return continuous_actions_; }
  /// Float part of the actions, rows × continuous_action_dim.
  [[nodiscard]] const slab<float>& continuous_actions() const noexcept { return continuous_actions_; }

  /// Rewards, one per row.
  [[nodiscard]] std::span<float> rewards() noexcept { return rewards_.block(0, rows()); }
  /// Rewards, one per row.
  [[nodiscard]] std::span<const float> rewards() const noexcept { return rewards_.block(0, rows()); }
  /// Terminated flags (0 or 1), one per row.
  [[nodiscard]] std::span<std::uint8_t> terminated() noexcept { return terminated_.block(0, rows()); }
  /// Terminated flags (0 or 1), one per row.
  [[nodiscard]] std::span<const std::uint8_t> terminated() const noexcept { return terminated_.block(0, rows()); }
  /// Truncated flags (0 or 1), one per row.
  [[nodiscard]] std::span<std::uint8_t> truncated() noexcept { return truncated_.block(0, rows()); }
  /// Truncated flags (0 or 1), one per row.
  [[nodiscard]] std::span<const std::uint8_t> truncated() const noexcept { return truncated_.block(0, rows()); }
  /// Active mask (0 or 1), one per row; 1 until an env writes it.
  [[nodiscard]] std::span<std::uint8_t> active() noexcept { return active_.block(0, rows()); }
  /// Active mask (0 or 1), one per row.
  [[nodiscard]] std::span<const std::uint8_t> active() const noexcept { return active_.block(0, rows()); }
  /// Action masks, rows × action_mask_dim(): 1 = legal. All 1 for envs that
  /// do not mask. Read by policies for the rows they act on.
  [[nodiscard]] slab<std::uint8_t>& action_masks() noexcept { return action_masks_; }
  /// Action masks, rows × action_mask_dim().
  [[nodiscard]] const slab<std::uint8_t>& action_masks() const noexcept { return action_masks_; }
  /// Team id of each row's slot (env::team_of), written when the envs are
  /// bound and constant after; 0 for single-agent envs.
  [[nodiscard]] std::span<std::int32_t> teams() noexcept { return teams_.block(0, rows()); }
  /// See teams().
  [[nodiscard]] std::span<const std::int32_t> teams() const noexcept { return teams_.block(0, rows()); }
  /// Episode returns (running, then final on the step that ends an episode).
  [[nodiscard]] std::span<float> episode_returns() noexcept { return episode_returns_.block(0, rows()); }
  /// Episode returns (running, then final on the step that ends an episode).
  [[nodiscard]] std::span<const float> episode_returns() const noexcept { return episode_returns_.block(0, rows()); }
  /// Episode lengths (running, then final on the step that ends an episode).
  [[nodiscard]] std::span<std::int32_t> episode_lengths() noexcept { return episode_lengths_.block(0, rows()); }
  /// Episode lengths (running, then final on the step that ends an episode).
  [[nodiscard]] std::span<const std::int32_t> episode_lengths() const noexcept {
    return episode_lengths_.block(0, rows());
  }

  /// 1 on the step where the row's env failed and was reset (`--on-env-error
  /// reset`): the observation row holds the first observation of a new
  /// episode, the step that failed produced no outcome (reward, terminated,
  /// truncated are 0; no final observation; the episode columns hold 0), and
  /// the interrupted episode is not an episode to count. 0 on every other step.
  [[nodiscard]] std::span<std::uint8_t> failed() noexcept { return failed_.block(0, rows()); }
  /// See failed().
  [[nodiscard]] std::span<const std::uint8_t> failed() const noexcept { return failed_.block(0, rows()); }

  /// One row_command per row, written by whoever drives the envs (a
  /// vector env's caller) while it owns the rows, and by env_slice for
  /// next-step auto-reset; step_all() clears each command it carries out.
  /// All 0 unless someone writes them: the learners never do.
  [[nodiscard]] std::span<std::uint8_t> commands() noexcept { return commands_.block(0, rows()); }
  /// See commands().
  [[nodiscard]] std::span<const std::uint8_t> commands() const noexcept { return commands_.block(0, rows()); }

  /// The env_rows view of rows [first, first + count). Unchecked.
  [[nodiscard]] env_rows view(std::size_t first, std::size_t count) noexcept;

 private:
  std::size_t rows_;
  std::size_t obs_dim_;
  std::size_t discrete_dim_;
  std::size_t continuous_dim_;
  std::size_t mask_dim_;
  bool has_masks_ = false;
  slab<float> observations_;
  slab<float> final_observations_;
  slab<std::int32_t> discrete_actions_;
  slab<float> continuous_actions_;
  slab<float> rewards_;
  slab<std::uint8_t> terminated_;
  slab<std::uint8_t> truncated_;
  slab<std::uint8_t> active_;
  slab<std::uint8_t> action_masks_;
  slab<std::int32_t> teams_;
  slab<float> episode_returns_;
  slab<std::int32_t> episode_lengths_;
  slab<std::uint8_t> failed_;
  slab<std::uint8_t> commands_;
};

}  // namespace coral::envs
