#pragma once
/// \file
/// A small replay and one-step insert blocks for the tests of the replay
/// actor and of what feeds it.

#include <cstdint>
#include <memory>

#include "coral/replay/replay_actor.hpp"

namespace coral::test {

/// A replay of one stream of 64 one-step transitions, sampled 4 at a time
/// once 10 are in, 2 samples per insert.
[[nodiscard]] inline replay::replay_actor_config one_stream_replay_config() {
  replay::replay_actor_config c;
  c.buffer = {.capacity = 64, .num_streams = 1, .obs_dim = 1, .discrete_action_dim = 1, .n_step = 1};
  c.samples_per_insert = 2.0;
  c.min_size = 10;
  c.batch_size = 4;
  c.prefetch = 2;
  c.seed = 3;
  return c;
}

/// A block of one one-step transition from observation `v` (action v, return v).
[[nodiscard]] inline std::unique_ptr<replay::insert_block> one_step_block(float v) {
  auto b = std::make_unique<replay::insert_block>(1, 1, 0);
  const float obs[1] = {v};
  const float next[1] = {v + 1};
  const std::int32_t action[1] = {static_cast<std::int32_t>(v)};
  replay::transition t;
  t.observation = obs;
  t.next_observation = next;
  t.discrete_action = action;
  t.n_step_return = v;
  t.discount = 0.5f;
  t.steps = 1;
  b->push(0, t);
  b->env_steps = 1;
  return b;
}

}  // namespace coral::test
