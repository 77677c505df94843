#pragma once
/// \file
/// What an env group does when one of its envs throws (`--on-env-error`).

#include <string_view>

namespace coral::actors {

/// What an env group does when one of its envs throws.
enum class env_error_policy {
  fail,   ///< stop the run: the group's actor fails naming the env
  reset,  ///< log it, count it, reset that env and go on
};

/// Parses fail or reset; throws config_error naming `--on-env-error`.
[[nodiscard]] env_error_policy parse_env_error_policy(std::string_view text);

}  // namespace coral::actors
