#pragma once
/// \file
/// Building one of the torch-free policies (random_policy.hpp,
/// constant_policy.hpp) by the name given with `--policy`.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "coral/actors/policy.hpp"
#include "coral/envs/space.hpp"

namespace coral::actors {

/// Builds policy `name` (`random`, whose rows draw from `streams` as
/// random_policy says, or `constant`). Throws config_error naming
/// `--policy` and the allowed values otherwise.
[[nodiscard]] std::unique_ptr<policy> make_builtin_policy(std::string_view name, const envs::space& action_space,
                                                          std::size_t rows, std::uint64_t seed,
                                                          std::span<const std::uint64_t> streams = {});

}  // namespace coral::actors
