#pragma once
/// \file
/// Python envs registered into coral's env registry (coral.register).

#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "coral/envs/config.hpp"

namespace coral::python {

/// Adds env `name` to the global registry. Each env made calls
/// `make_adapter(seed, env_index, kwargs)` under the GIL, which returns
/// (adapter, observation space description, action space description); the
/// adapter's reset() returns a flat float32 observation, and step(discrete,
/// continuous) returns (flat observation, reward, terminated, truncated).
/// A multi-agent (or action-masking) env's factory returns (adapter, its
/// spaces, agent slots M, mask size K): its adapter's reset() returns
/// (observations M × obs, active M, masks M × K or None) and
/// step(discrete M × d, continuous M × c, active M) returns (observations,
/// rewards, terminated, truncated, active, masks), all numpy arrays.
/// Throws usage_error if the name is taken.
void register_python_env(const std::string& name, const std::string& description,
                         std::vector<envs::config_key> keys, pybind11::object make_adapter);

}  // namespace coral::python
