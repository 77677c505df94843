#include "coral/training/replay_feeder.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/actors/step_consumer.hpp"
#include "coral/core/error.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/replay/errors.hpp"
#include "coral/replay/replay_actor.hpp"
#include "../support/replay_blocks.hpp"

using coral::replay::replay_actor;
using coral::replay::replay_msg;

TEST_CASE("a replay feeder needs one replay stream per batch row", "[training][feeder][errors]") {
  replay_actor r(coral::test::one_stream_replay_config());  // one stream
  coral::envs::env_batch batch(2, 1, 1, 0);
  CHECK_THROWS_MATCHES(coral::training::replay_feeder(batch, r, nullptr, {}), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(coral::replay::errors::feeder_streams), 1, 2)));
}

TEST_CASE("a replay feeder whose replay inbox is full fails rather than lose inserts", "[training][feeder][errors]") {
  replay_actor r(coral::test::one_stream_replay_config());
  coral::envs::env_batch batch(1, 1, 1, 0);
  coral::training::replay_feeder feeder(batch, r, nullptr, {.n_step = 1});
  // Nothing runs the actor here, so its inbox fills up.
  std::size_t blocks = 0;
  while (r.inbox().try_send(replay_msg(coral::test::one_step_block(static_cast<float>(blocks))))) ++blocks;
  REQUIRE(blocks > 0);
  const coral::actors::row_range rows[1] = {{0, 1}};
  CHECK_THROWS_MATCHES(feeder.consume({.batch = batch, .ranges = rows}), coral::usage_error,
                       Catch::Message(fmt::format(fmt::runtime(coral::replay::errors::inbox_full), blocks)));
}
