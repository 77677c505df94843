#include "coral/training/replay_feeder.hpp"

#include <cstdint>
#include <memory>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/actors/step_consumer.hpp"
#include "coral/core/error.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/replay/errors.hpp"
#include "coral/replay/replay_actor.hpp"

namespace {

using coral::replay::insert_block;
using coral::replay::replay_actor;
using coral::replay::replay_actor_config;
using coral::replay::replay_msg;

/// A replay of one stream that a few inserts fill.
replay_actor_config feeder_replay_config() {
  replay_actor_config c;
  c.buffer = {.capacity = 64, .num_streams = 1, .obs_dim = 1, .discrete_action_dim = 1, .n_step = 1};
  c.samples_per_insert = 2.0;
  c.min_size = 10;
  c.batch_size = 4;
  c.prefetch = 2;
  c.seed = 3;
  return c;
}

/// A block of one one-step transition from observation `v`.
std::unique_ptr<insert_block> feeder_step(float v) {
  auto b = std::make_unique<insert_block>(1, 1, 0);
  const float obs[1] = {v};
  const float next[1] = {v + 1};
  const std::int32_t action[1] = {static_cast<std::int32_t>(v)};
  coral::replay::transition t;
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

}  // namespace

TEST_CASE("a replay feeder needs one replay stream per batch row", "[training][feeder][errors]") {
  replay_actor r(feeder_replay_config());  // one stream
  coral::envs::env_batch batch(2, 1, 1, 0);
  CHECK_THROWS_MATCHES(coral::training::replay_feeder(batch, r, nullptr, {}), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(coral::replay::errors::feeder_streams), 1, 2)));
}

TEST_CASE("a replay feeder whose replay inbox is full fails rather than lose inserts", "[training][feeder][errors]") {
  replay_actor r(feeder_replay_config());
  coral::envs::env_batch batch(1, 1, 1, 0);
  coral::training::replay_feeder feeder(batch, r, nullptr, {.n_step = 1});
  // Nothing runs the actor here, so its inbox fills up.
  std::size_t blocks = 0;
  while (r.inbox().try_send(replay_msg(feeder_step(static_cast<float>(blocks))))) ++blocks;
  REQUIRE(blocks > 0);
  const coral::actors::row_range rows[1] = {{0, 1}};
  CHECK_THROWS_MATCHES(feeder.consume({.batch = batch, .ranges = rows}), coral::usage_error,
                       Catch::Message(fmt::format(fmt::runtime(coral::replay::errors::inbox_full), blocks)));
}
