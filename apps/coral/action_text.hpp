#pragma once
/// \file
/// The text syntax of `coral envs rollout --actions`.
///
/// `--actions` is a comma-separated list with one entry per step. An entry is
/// one agent row's action, or, for multi-agent envs, one action per row
/// separated by `/` (`0/1/1/0`); a single action is applied to every row. A
/// row's action lists the scalars of its flat action in leaf order separated
/// by `:`: a Discrete(n) action is one integer (`1`), a MultiDiscrete action
/// one integer per component (`2:0:1`), a Box action one number per element
/// (`0.5:-1`), and a Dict or Tuple action the scalars of its leaves in order.
/// When there are fewer entries than steps the list is cycled.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coral/envs/space.hpp"

namespace coral::cli {

/// One step's actions for every row of an env, rows back to back.
struct step_actions {
  std::vector<std::int32_t> discrete;  ///< rows × action_space.discrete_size()
  std::vector<float> continuous;       ///< rows × action_space.continuous_size()
};

/// Parses `--actions` text for an env with `rows` rows. Throws config_error
/// naming the first entry that is wrong, and its position: with neither 1
/// nor `rows` row actions (errors::wrong_action_count, saying how many
/// were expected and given), a row action with the wrong number of scalars
/// (errors::wrong_scalar_count), or one that does not parse or lies
/// outside `action_space` (envs::errors::bad_action).
[[nodiscard]] std::vector<step_actions> parse_actions(std::string_view text, const envs::space& action_space,
                                                      std::size_t rows);

/// One row's flat action in the syntax above (e.g. `1`, `2:0`, `0.5:-1`).
[[nodiscard]] std::string format_action(const envs::space& action_space, std::span<const std::int32_t> discrete,
                                        std::span<const float> continuous);

}  // namespace coral::cli
