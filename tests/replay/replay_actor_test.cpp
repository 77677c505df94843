#include "coral/replay/replay_actor.hpp"
#include "coral/replay/replay_feeder.hpp"

#include <chrono>
#include <cmath>
#include <string>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "../actors/counter_env.hpp"
#include "../support/watchdog.hpp"
#include "coral/actors/sampler.hpp"
#include "coral/core/runtime.hpp"

using namespace std::chrono_literals;
using coral::replay::insert_block;
using coral::replay::replay_actor;
using coral::replay::replay_actor_config;
using coral::replay::replay_msg;
using coral::replay::sample_batch;

namespace {

replay_actor_config small_config() {
  replay_actor_config c;
  c.buffer = {.capacity = 64, .num_streams = 1, .obs_dim = 1, .discrete_action_dim = 1, .n_step = 1};
  c.samples_per_insert = 2.0;
  c.min_size = 10;
  c.batch_size = 4;
  c.prefetch = 2;
  c.seed = 3;
  return c;
}

/// A block of one env step: a one-step transition from value v to v + 1.
std::unique_ptr<insert_block> one_step(float v) {
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

TEST_CASE("the replay actor serves nothing before min_size, then holds samples per insert within its window",
          "[replay][actor]") {
  coral::test::watchdog dog("replay ratio", 30s);
  asio::io_context io;
  replay_actor r(small_config());
  asio::co_spawn(io, r.run(), asio::detached);
  for (int i = 0; i < 2; ++i) REQUIRE(r.inbox().try_send(replay_msg(r.make_request())));
  io.poll();
  std::uint64_t inserted = 0;
  std::uint64_t served = 0;
  const double spi = 2.0;
  for (int step = 0; step < 200; ++step) {
    REQUIRE(r.inbox().try_send(replay_msg(one_step(static_cast<float>(step)))));
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
  auto c = small_config();
  c.buffer.capacity = 16;
  replay_actor r(c);
  asio::co_spawn(io, r.run(), asio::detached);
  for (int i = 0; i < 12; ++i) REQUIRE(r.inbox().try_send(replay_msg(one_step(static_cast<float>(i)))));
  REQUIRE(r.inbox().try_send(replay_msg(r.make_request())));
  io.poll();
  auto b = r.samples().try_receive();
  REQUIRE(b);
  auto batch = std::move(*b);
  // Overwrite the whole ring: every sampled slot now holds another item.
  for (int i = 0; i < 20; ++i) REQUIRE(r.inbox().try_send(replay_msg(one_step(100.0f + static_cast<float>(i)))));
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

TEST_CASE("the replay actor wakes a waiting feeder once its allowance covers what it needs", "[replay][actor]") {
  coral::test::watchdog dog("replay waker", 30s);
  asio::io_context io;
  replay_actor r(small_config());
  coral::channel<coral::actors::ready_msg> waker(4);
  r.set_waker(&waker, 77);
  asio::co_spawn(io, r.run(), asio::detached);
  io.poll();
  const auto allowed = r.insert_allowance();
  CHECK(r.wait_for_allowance(allowed));
  CHECK_FALSE(r.wait_for_allowance(allowed + 1));
  CHECK_FALSE(waker.try_receive());
  // Fill up to the allowance, then let the learner sample: the allowance rises and the note arrives.
  for (std::uint64_t i = 0; i < allowed; ++i) REQUIRE(r.inbox().try_send(replay_msg(one_step(1.0f))));
  REQUIRE(r.inbox().try_send(replay_msg(r.make_request())));
  io.poll();
  CHECK(r.insert_allowance() > allowed);
  auto note = waker.try_receive();
  REQUIRE(note);
  CHECK(note->group == 77);
  r.close();
  io.run();
}

namespace {

using coral::executor_mode;
using coral::actors::topology;

/// Runs sampler + feeder + replay actor + a learner that checks every
/// sampled n-step transition of the counter env against what must be true.
struct pipeline_result {
  std::uint64_t env_steps = 0;
  std::uint64_t transitions = 0;
  std::uint64_t sampled = 0;
  std::uint64_t inserted = 0;
  std::uint64_t checked = 0;
  std::uint64_t errors = 0;
  std::string first_error;
  std::uint64_t episodes = 0;
  std::uint64_t cuts = 0;
  double min_diff = 0;
  double max_diff = 0;
};

pipeline_result run_pipeline(topology t, executor_mode mode, std::size_t n_step, std::uint64_t steps,
                             bool env_fails = false) {
  coral::test::counter_env::register_once();
  coral::actors::sampler_options so;
  so.env = "test-counter";
  so.env_args = {{"episode_length", "7"}};
  if (env_fails) {
    // Env 1 throws on its 45th step, in the middle of its 7th episode, and is reset.
    so.env_args.push_back({"fail_env", "1"});
    so.env_args.push_back({"fail_step", "45"});
    so.on_env_error = coral::actors::env_error_policy::reset;
  }
  so.topo = t;
  so.num_envs = 4;
  so.threads = 2;
  so.executor = mode;
  so.seed = 11;
  coral::actors::sampler s(so);
  const double gamma = 0.5;
  replay_actor_config rc;
  rc.buffer = {.capacity = 4 * 64, .num_streams = 4, .obs_dim = 4, .discrete_action_dim = 1, .n_step = n_step};
  rc.samples_per_insert = 4.0;
  rc.min_size = 32;
  rc.batch_size = 16;
  rc.prefetch = 3;
  rc.max_group_steps = 1;
  rc.seed = 5;
  replay_actor r(rc);
  pipeline_result out;
  std::atomic<std::uint64_t> episodes{0};
  std::atomic<std::uint64_t> episode_errors{0};  // the callback runs on the batcher's thread
  coral::replay::replay_feeder::options fo;
  fo.n_step = n_step;
  fo.gamma = gamma;
  fo.max_env_steps = steps;
  coral::replay::replay_feeder feeder(
      s.batch(), s.group_rows(), r,
      [&](double ret, double len) {
        if (ret != 7.0 || len != 7.0) ++episode_errors;
        ++episodes;
        return false;
      },
      fo);
  s.announce_to(feeder.ready());
  auto pol = coral::actors::make_builtin_policy("random", s.action_space(), s.rows(), 7);
  coral::runtime rt({.mode = mode});
  rt.on_stop([&] {
    feeder.close();
    r.close();
  });
  coral::actors::inference_batcher::options bo;
  bo.batch_size = s.wires().batch_size;
  s.spawn(rt, *pol, bo, &feeder);
  rt.spawn("replay-feeder", rt.pool("sampling", 2), feeder.run(s.ready_channels(), [&](auto) { rt.request_stop(); }));
  rt.spawn("replay", rt.pool("replay", 1), r.run());
  auto fail = [&](std::string what) {
    if (out.errors++ == 0) out.first_error = std::move(what);
  };
  rt.spawn("learner", rt.pool("learner", 1), [&]() -> asio::awaitable<void> {
    for (std::size_t i = 0; i < rc.prefetch; ++i) {
      const bool sent = co_await r.inbox().async_send(replay_msg(r.make_request()));
      if (!sent) co_return;
    }
    for (;;) {
      auto got = co_await r.samples().async_receive();
      if (!got) co_return;
      auto b = std::move(*got);
      for (std::size_t i = 0; i < b->size; ++i) {
        const float* o = b->observations.data() + 4 * i;
        const float* o2 = b->next_observations.data() + 4 * i;
        // [env, total steps, steps in episode, last action]
        const long dk = std::lround(o2[1] - o[1]);
        if (o2[0] != o[0]) fail("bootstrap observation from another env");
        if (dk < 1 || dk > static_cast<long>(n_step)) {
          fail("k out of range: " + std::to_string(dk));
          continue;
        }
        const auto k = static_cast<std::size_t>(dk);
        const bool ended = o2[2] == 7.0f;
        if (!ended && k != n_step) fail("a short transition that did not end its episode");
        if (ended != (b->discounts[i] == 0.0f)) fail("discount does not match the episode end");
        if (!ended && b->discounts[i] != static_cast<float>(std::pow(gamma, k))) fail("discount is not gamma^k");
        double ret = 0;
        for (std::size_t j = 0; j < k; ++j) ret += std::pow(gamma, j);
        if (std::abs(b->returns[i] - ret) > 1e-5) fail("n-step return is wrong");
        if (o2[2] != o[2] + static_cast<float>(k)) fail("next observation is not k steps later in the episode");
        ++out.checked;
      }
      b->td_errors.assign(b->size, 1.0f);
      const bool sent = co_await r.inbox().async_send(replay_msg(std::move(b)));
      if (!sent) co_return;
    }
  });
  rt.run();
  out.env_steps = feeder.env_steps();
  out.transitions = r.stats().transitions.load();
  out.sampled = r.stats().sampled.load();
  out.inserted = r.stats().env_steps.load();
  out.episodes = episodes.load();
  if (episode_errors.load() > 0 && out.errors++ == 0) out.first_error = "an episode's return or length is wrong";
  out.cuts = r.stats().cuts.load();
  out.min_diff = r.limiter().min_diff();
  out.max_diff = r.limiter().max_diff();
  return out;
}

}  // namespace

TEST_CASE("sampler, feeder and replay actor deliver correct n-step transitions under the rate limit in every topology",
          "[replay][actor][pipeline]") {
  coral::test::watchdog dog("replay pipeline", 120s);
  auto t = GENERATE(topology::sync, topology::double_buffer, topology::pool);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  auto n = GENERATE(std::size_t{1}, std::size_t{3});
  CAPTURE(coral::actors::to_string(t), mode == executor_mode::single ? "single" : "threads", n);
  const auto r = run_pipeline(t, mode, n, 4000);
  INFO(r.first_error);
  CHECK(r.errors == 0);
  CHECK(r.checked > 1000);
  CHECK(r.env_steps >= 4000);
  CHECK(r.episodes > 0);
  // Every env step acted on was counted in, and each produced one
  // transition, except those still waiting for later rewards or outcomes.
  CHECK(r.inserted <= r.env_steps);
  CHECK(r.transitions <= r.inserted);
  CHECK(r.transitions + 4 * (n + 1) >= r.inserted);
  // The learner got what the ratio allows, never more.
  const double diff = static_cast<double>(r.inserted) * 4.0 - static_cast<double>(r.sampled);
  CHECK(diff >= r.min_diff);
}

TEST_CASE("an env reset after a failure cuts its replay stream: no transition spans the reset", "[replay][actor][pipeline]") {
  coral::test::watchdog dog("replay pipeline with a failing env", 120s);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  CAPTURE(mode == executor_mode::single ? "single" : "threads");
  const auto r = run_pipeline(topology::pool, mode, 3, 4000, true);
  INFO(r.first_error);
  CHECK(r.errors == 0);
  CHECK(r.checked > 1000);
  CHECK(r.env_steps >= 4000);
  CHECK(r.cuts == 1);
}

