#pragma once
// Test helper: K envs of one kind from a registry, their batch and their slice.

#include <memory>
#include <string_view>
#include <vector>

#include "coral/envs/env_batch.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"

namespace coral::envs::testing {

inline env_batch batch_for(const std::vector<std::unique_ptr<env>>& envs) {
  std::size_t rows = 0;
  for (const auto& e : envs) rows += e->max_agents();
  return env_batch(rows, envs.front()->observation_space(), envs.front()->action_space());
}

struct harness {
  harness(std::vector<std::unique_ptr<env>> made)
      : batch(batch_for(made)), slice(batch, 0, std::move(made)) {}

  harness(std::string_view name, const config_args& args, std::uint64_t seed, std::size_t count = 1,
          const registry& r = registry::global())
      : harness(r.make_many(name, args, seed, 0, count)) {}

  // Sets the first discrete action component of every row.
  void act(std::int32_t a) {
    for (std::size_t r = 0; r < batch.rows(); ++r) batch.discrete_actions()(r, 0) = a;
  }

  std::vector<float> obs(std::size_t row = 0) const {
    auto s = batch.observations().row(row);
    return {s.begin(), s.end()};
  }
  std::vector<float> final_obs(std::size_t row = 0) const {
    auto s = batch.final_observations().row(row);
    return {s.begin(), s.end()};
  }
  bool done(std::size_t row = 0) const { return batch.terminated()[row] != 0 || batch.truncated()[row] != 0; }

  env_batch batch;
  env_slice slice;
};

}  // namespace coral::envs::testing
