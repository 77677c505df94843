#include "coral/replay/replay_actor.hpp"

#include <chrono>
#include <cstring>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/watchdog.hpp"
#include "coral/actors/messages.hpp"
#include "coral/core/error.hpp"
#include "coral/replay/errors.hpp"
#include "../support/replay_blocks.hpp"

using namespace std::chrono_literals;
using coral::replay::insert_block;
using coral::replay::replay_actor;
using coral::replay::replay_actor_config;
using coral::replay::replay_msg;
using coral::replay::sample_batch;

namespace {

/// 12 one-step inserts into a running actor `r` on `io`, then one request:
/// the batch it serves.
std::unique_ptr<sample_batch> first_draw(replay_actor& r, asio::io_context& io) {
  for (int i = 0; i < 12; ++i) REQUIRE(r.inbox().try_send(replay_msg(coral::test::one_step_block(static_cast<float>(i)))));
  REQUIRE(r.inbox().try_send(replay_msg(r.make_request())));
  io.poll();
  auto b = r.samples().try_receive();
  REQUIRE(b);
  return std::move(*b);
}

}  // namespace

TEST_CASE("the replay actor serves nothing before min_size, then holds samples per insert within its window",
          "[replay][actor]") {
  coral::test::watchdog dog("replay ratio", 30s);
  asio::io_context io;
  replay_actor r(coral::test::one_stream_replay_config());
  asio::co_spawn(io, r.run(), asio::detached);
  for (int i = 0; i < 2; ++i) REQUIRE(r.inbox().try_send(replay_msg(r.make_request())));
  io.poll();
  std::uint64_t inserted = 0;
  std::uint64_t served = 0;
  const double spi = 2.0;
  for (int step = 0; step < 200; ++step) {
    REQUIRE(r.inbox().try_send(replay_msg(coral::test::one_step_block(static_cast<float>(step)))));
    ++inserted;
    io.poll();
    // The learner hands every batch straight back.
    while (auto b = r.samples().try_receive()) {
      ++served;
      auto batch = std::move(*b);
      REQUIRE(batch->size == 4);
      for (std::size_t i = 0; i < batch->size; ++i) {
        // Every row is one transition, gathered whole.
        CHECK(batch->next_observations[i] == batch->observations[i] + 1);
        CHECK(batch->returns[i] == batch->observations[i]);
        CHECK(batch->discrete[i] == static_cast<std::int32_t>(batch->observations[i]));
        CHECK(batch->discounts[i] == 0.5f);
      }
      REQUIRE(r.inbox().try_send(replay_msg(std::move(batch))));
      io.poll();
    }
    if (inserted < 10) CHECK(served == 0);
    const double diff = static_cast<double>(inserted) * spi - static_cast<double>(r.stats().sampled.load());
    if (inserted >= 10) {
      // Samples never run ahead of the window, and never lag by more than a batch beyond it.
      CHECK(diff >= r.limiter().min_diff());
      CHECK(diff <= r.limiter().max_diff() + 4);
    }
  }
  CHECK(served > 0);
  const double ratio = static_cast<double>(r.stats().sampled.load()) / static_cast<double>(inserted);
  CHECK(ratio == Approx(spi).margin(0.2));
  r.close();
  io.run();
}

TEST_CASE("a batch handed back with TD errors updates priorities, and stale ones are counted, not applied",
          "[replay][actor]") {
  coral::test::watchdog dog("replay priorities", 30s);
  asio::io_context io;
  auto c = coral::test::one_stream_replay_config();
  c.buffer.capacity = 16;
  replay_actor r(c);
  asio::co_spawn(io, r.run(), asio::detached);
  auto batch = first_draw(r, io);
  // Overwrite the whole ring: every sampled slot now holds another item.
  for (int i = 0; i < 20; ++i) REQUIRE(r.inbox().try_send(replay_msg(coral::test::one_step_block(100.0f + static_cast<float>(i)))));
  batch->td_errors.assign(batch->size, 5.0f);
  REQUIRE(r.inbox().try_send(replay_msg(std::move(batch))));
  io.poll();
  CHECK(r.stats().stale_updates.load() == 4);
  CHECK(r.stats().priority_updates.load() == 0);

  // A fresh batch handed back at once updates every draw.
  auto again = r.samples().try_receive();
  REQUIRE(again);
  auto fresh = std::move(*again);
  fresh->td_errors.assign(fresh->size, 5.0f);
  REQUIRE(r.inbox().try_send(replay_msg(std::move(fresh))));
  io.poll();
  CHECK(r.stats().priority_updates.load() == 4);
  CHECK(r.buffer().max_priority() == Approx(5.0 + c.buffer.epsilon));
  r.close();
  io.run();
}

TEST_CASE("a uniform replay actor drops the TD errors handed back, non-finite ones too, and keeps serving",
          "[replay][actor][uniform]") {
  coral::test::watchdog dog("uniform replay feedback", 30s);
  asio::io_context io;
  auto c = coral::test::one_stream_replay_config();
  c.prioritized = false;
  replay_actor r(c);
  asio::co_spawn(io, r.run(), asio::detached);
  auto batch = first_draw(r, io);
  const double max_before = r.buffer().max_priority();
  // A prioritized replay stops at a NaN TD error (the tree cannot hold it);
  // a uniform one never reads a priority, so it neither stores nor checks it.
  batch->td_errors.assign(batch->size, 5.0f);
  batch->td_errors[1] = std::numeric_limits<float>::quiet_NaN();
  REQUIRE(r.inbox().try_send(replay_msg(std::move(batch))));
  io.poll();  // a prioritized actor would throw out of here
  CHECK(r.stats().priority_updates.load() == 0);
  CHECK(r.stats().stale_updates.load() == 0);
  CHECK(r.buffer().max_priority() == max_before);
  // The batch handed back is a request: the actor serves it again.
  CHECK(r.samples().try_receive());
  r.close();
  io.run();
}

TEST_CASE("the replay actor wakes a waiting feeder once its allowance covers what it needs", "[replay][actor]") {
  coral::test::watchdog dog("replay waker", 30s);
  asio::io_context io;
  replay_actor r(coral::test::one_stream_replay_config());
  coral::channel<coral::actors::gate_msg> waker(4);
  r.set_waker(&waker);
  asio::co_spawn(io, r.run(), asio::detached);
  io.poll();
  const auto allowed = r.insert_allowance();
  CHECK(r.wait_for_allowance(allowed));
  CHECK_FALSE(r.wait_for_allowance(allowed + 1));
  CHECK_FALSE(waker.try_receive());
  // Fill up to the allowance, then let the learner sample: the allowance rises and the note arrives.
  for (std::uint64_t i = 0; i < allowed; ++i) REQUIRE(r.inbox().try_send(replay_msg(coral::test::one_step_block(1.0f))));
  REQUIRE(r.inbox().try_send(replay_msg(r.make_request())));
  io.poll();
  CHECK(r.insert_allowance() > allowed);
  auto note = waker.try_receive();
  REQUIRE(note);
  CHECK(std::holds_alternative<coral::actors::allowance_raised>(*note));
  r.close();
  io.run();
}

TEST_CASE("a loaded state whose limiter counters near 2^64 saturates the insert allowance instead of wrapping",
          "[replay][actor][snapshot]") {
  // fuzz/regressions/replay_actor/limiter-counters-past-2-to-64: the
  // allowance was converted from a double past 2^64 (undefined) or wrapped.
  auto config = coral::test::one_stream_replay_config();
  config.samples_per_insert = 0.5;
  constexpr auto most = std::numeric_limits<std::uint64_t>::max();
  // After the 8-byte magic: the limiter's inserts, then its samples (basic_replay_actor_impl.hpp).
  auto state_with = [&](std::uint64_t inserts, std::uint64_t samples) {
    std::vector<char> state = replay_actor(config).save();
    std::memcpy(state.data() + 8, &inserts, sizeof inserts);
    std::memcpy(state.data() + 16, &samples, sizeof samples);
    return state;
  };
  replay_actor r(config);
  SECTION("samples past what the allowance can count") {
    r.load(state_with(4, std::uint64_t{1} << 63));
  }
  SECTION("inserts that leave no room for the steps in flight") {
    r.load(state_with(most - 1, 0));
  }
  CHECK(r.insert_allowance() == most);
  CHECK(r.wait_for_allowance(most));
}

TEST_CASE("a snapshot is the actor's state after exactly the messages sent before the request", "[replay][actor][snapshot]") {
  coral::test::watchdog dog("replay snapshot", 30s);
  asio::io_context io;
  replay_actor r(coral::test::one_stream_replay_config());
  std::exception_ptr failure;
  asio::co_spawn(io, r.run(), [&](std::exception_ptr e) { failure = std::move(e); });
  for (int i = 0; i < 12; ++i) REQUIRE(r.inbox().try_send(replay_msg(coral::test::one_step_block(static_cast<float>(i)))));
  REQUIRE(r.inbox().try_send(replay_msg(coral::replay::snapshot_request{7})));
  for (int i = 12; i < 17; ++i) REQUIRE(r.inbox().try_send(replay_msg(coral::test::one_step_block(static_cast<float>(i)))));
  io.poll();
  REQUIRE_FALSE(failure);
  auto snap = r.snapshots().try_receive();
  REQUIRE(snap);
  CHECK(snap->tag == 7);
  CHECK_FALSE(r.snapshots().try_receive());
  replay_actor copy(coral::test::one_stream_replay_config());
  copy.load(snap->state);
  CHECK(copy.limiter().inserts() == 12);
  CHECK(copy.stats().env_steps.load() == 12);
  // The 12 one-step transitions, the last one still waiting for its bootstrap item.
  CHECK(copy.buffer().size() == 11);
  CHECK(r.limiter().inserts() == 17);

  // A second answer while the first was not taken: the caller broke the protocol.
  REQUIRE(r.inbox().try_send(replay_msg(coral::replay::snapshot_request{8})));
  REQUIRE(r.inbox().try_send(replay_msg(coral::replay::snapshot_request{9})));
  io.poll();
  REQUIRE(failure);
  try {
    std::rethrow_exception(failure);
  } catch (const coral::usage_error& e) {
    CHECK(std::string(e.what()) == coral::replay::errors::snapshot_unclaimed);
  }
  r.close();
  io.run();
}

TEST_CASE("a replay actor rejects a zero batch size or prefetch with exact messages", "[replay][actor][errors]") {
  auto c = coral::test::one_stream_replay_config();
  c.batch_size = 0;
  CHECK_THROWS_MATCHES(replay_actor(c), coral::config_error,
                       Catch::Message("replay_actor: batch_size must be at least 1"));
  c = coral::test::one_stream_replay_config();
  c.prefetch = 0;
  CHECK_THROWS_MATCHES(replay_actor(c), coral::config_error,
                       Catch::Message("replay_actor: prefetch must be at least 1"));
}

TEST_CASE("a replay actor refuses a state that is not its own or is cut short, saying what is wrong",
          "[replay][actor][snapshot][errors]") {
  replay_actor saved(coral::test::one_stream_replay_config());
  std::vector<char> blob;
  saved.save(blob);
  replay_actor target(coral::test::one_stream_replay_config());
  const auto malformed = [](const char* what) {
    return Catch::Message(fmt::format(fmt::runtime(coral::replay::errors::actor_state_malformed), what));
  };
  const std::vector<char> garbage(blob.size(), 'x');
  CHECK_THROWS_MATCHES(target.load(garbage), coral::config_error, malformed("not a replay actor state"));
  // The magic, then half of the limiter's insert count.
  CHECK_THROWS_MATCHES(target.load(std::span(blob).first(8 + 4)), coral::config_error, malformed("limiter inserts"));
  target.load(blob);
  CHECK(target.limiter().inserts() == 0);
}

TEST_CASE("closing the replay actor ends a wait for a snapshot", "[replay][actor][snapshot]") {
  coral::test::watchdog dog("replay snapshot close", 30s);
  asio::io_context io;
  replay_actor r(coral::test::one_stream_replay_config());
  bool ended = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto snap = co_await r.snapshots().async_receive();
        ended = !snap.has_value();
      },
      asio::detached);
  io.poll();
  CHECK_FALSE(ended);
  r.close();
  io.poll();
  CHECK(ended);
}
