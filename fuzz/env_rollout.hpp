#pragma once
/// \file
/// Steps one env as `coral envs rollout` does, for the targets whose parsed
/// input ends up in an env (`--env-arg`, `--actions`), and checks what the
/// env writes.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "coral/envs/env.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/core/rng.hpp"
#include "coral/envs/space.hpp"
#include "fuzz_support.hpp"

namespace coral::fuzz {

/// Whether the targets may step env `name`: not the envs that stall, throw
/// or allocate on purpose, as configured (a fuzzed config would make every
/// run a timeout, or a crash that is the env doing its job).
inline bool steppable(std::string_view name) { return name != "delay" && name != "faulty"; }

/// Whether env `name` simulates physics that a config may make diverge:
/// the MuJoCo envs. Their contract (issue 13) is that an unstable
/// simulation, or a reward that overflows (a fuzzed weight of 1e308), is an
/// env fault that --on-env-error handles: env_failed, not a crash.
inline bool may_diverge(std::string_view name) {
  for (const std::string_view physics : {"halfcheetah", "hopper", "walker2d", "ant", "humanoid", "inverted_pendulum"}) {
    if (name == physics) return true;
  }
  return false;
}

/// Checks that every active row of `batch` holds an observation of
/// `observation_space` and a finite reward.
inline void check_rows(envs::env_batch& batch, const envs::space& observation_space) {
  for (std::size_t row = 0; row < batch.rows(); ++row) {
    if (batch.active()[row] == 0) continue;
    check(envs::contains(observation_space, envs::unflatten(observation_space, batch.observations().row(row))),
          "an env wrote an observation outside its observation space");
    check(std::isfinite(batch.rewards()[row]), "an env wrote a reward that is not finite");
  }
}

/// Resets `e`, then steps it `steps` times; before each step `act(t, batch)`
/// writes the actions of step t into the batch's action rows. Every
/// observation and reward it writes is checked (check_rows). An exception
/// from the env ends the run as a crash: a config the registry accepted, or
/// an action inside the action space, must not make a built-in env fail.
template <class Act>
void roll(std::unique_ptr<envs::env> e, std::size_t steps, Act&& act) {
  const envs::space observation_space = e->observation_space();
  envs::env_batch batch(e->max_agents(), observation_space, e->action_space());
  std::vector<std::unique_ptr<envs::env>> one;
  one.push_back(std::move(e));
  envs::env_slice slice(batch, 0, std::move(one));
  slice.reset_all();
  check_rows(batch, observation_space);
  for (std::size_t t = 0; t < steps; ++t) {
    act(t, batch);
    slice.step_all();
    check_rows(batch, observation_space);
  }
}

/// roll() with uniform random actions drawn from the env's action space.
inline void roll_random(std::unique_ptr<envs::env> e, std::size_t steps, std::uint64_t seed) {
  const envs::space action_space = e->action_space();
  coral::rng r(seed);
  roll(std::move(e), steps, [&](std::size_t, envs::env_batch& batch) {
    for (std::size_t row = 0; row < batch.rows(); ++row) {
      envs::sample_action(action_space, r, batch.discrete_actions().row(row), batch.continuous_actions().row(row));
    }
  });
}

}  // namespace coral::fuzz
