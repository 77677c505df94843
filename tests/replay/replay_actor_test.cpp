#include "coral/replay/replay_actor.hpp"
#include "coral/replay/replay_feeder.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../actors/counter_env.hpp"
#include "../support/watchdog.hpp"
#include "coral/actors/sampler.hpp"
#include "coral/core/error.hpp"
#include "coral/replay/errors.hpp"
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

TEST_CASE("a loaded state whose limiter counters near 2^64 saturates the insert allowance instead of wrapping",
          "[replay][actor][snapshot]") {
  // fuzz/regressions/replay_actor/limiter-counters-past-2-to-64: the
  // allowance was converted from a double past 2^64 (undefined) or wrapped.
  auto config = small_config();
  config.samples_per_insert = 0.5;
  constexpr auto most = std::numeric_limits<std::uint64_t>::max();
  // After the 8-byte magic: the limiter's inserts, then its samples (replay_actor_persist.cpp).
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
  replay_actor r(small_config());
  std::exception_ptr failure;
  asio::co_spawn(io, r.run(), [&](std::exception_ptr e) { failure = std::move(e); });
  for (int i = 0; i < 12; ++i) REQUIRE(r.inbox().try_send(replay_msg(one_step(static_cast<float>(i)))));
  REQUIRE(r.inbox().try_send(replay_msg(coral::replay::snapshot_request{7})));
  for (int i = 12; i < 17; ++i) REQUIRE(r.inbox().try_send(replay_msg(one_step(static_cast<float>(i)))));
  io.poll();
  REQUIRE_FALSE(failure);
  auto snap = r.snapshots().try_receive();
  REQUIRE(snap);
  CHECK(snap->tag == 7);
  CHECK_FALSE(r.snapshots().try_receive());
  replay_actor copy(small_config());
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
  auto c = small_config();
  c.batch_size = 0;
  CHECK_THROWS_MATCHES(replay_actor(c), coral::config_error,
                       Catch::Message("replay_actor: batch_size must be at least 1"));
  c = small_config();
  c.prefetch = 0;
  CHECK_THROWS_MATCHES(replay_actor(c), coral::config_error,
                       Catch::Message("replay_actor: prefetch must be at least 1"));
}

TEST_CASE("a replay actor refuses a state that is not its own or is cut short, saying what is wrong",
          "[replay][actor][snapshot][errors]") {
  replay_actor saved(small_config());
  std::vector<char> blob;
  saved.save(blob);
  replay_actor target(small_config());
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

TEST_CASE("a replay feeder needs one replay stream per batch row", "[replay][feeder][errors]") {
  replay_actor r(small_config());  // one stream
  coral::envs::env_batch batch(2, 1, 1, 0);
  CHECK_THROWS_MATCHES(
      coral::replay::replay_feeder(batch, {{0, 2}}, r, nullptr, {}), coral::config_error,
      Catch::Message("replay_feeder: the replay has 1 streams, the batch 2 rows (one stream per row)"));
}

TEST_CASE("a replay feeder whose replay inbox is full fails rather than lose inserts", "[replay][feeder][errors]") {
  replay_actor r(small_config());
  coral::envs::env_batch batch(1, 1, 1, 0);
  coral::replay::replay_feeder feeder(batch, {{0, 1}}, r, nullptr, {.n_step = 1});
  // Nothing runs the actor here, so its inbox fills up.
  std::size_t blocks = 0;
  while (r.inbox().try_send(replay_msg(one_step(static_cast<float>(blocks))))) ++blocks;
  REQUIRE(blocks > 0);
  const coral::actors::row_range rows[1] = {{0, 1}};
  CHECK_THROWS_MATCHES(feeder.consume({.batch = batch, .ranges = rows}), coral::usage_error,
                       Catch::Message(fmt::format(fmt::runtime(coral::replay::errors::inbox_full), blocks)));
}

TEST_CASE("closing the replay actor ends a wait for a snapshot", "[replay][actor][snapshot]") {
  coral::test::watchdog dog("replay snapshot close", 30s);
  asio::io_context io;
  replay_actor r(small_config());
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

namespace {

using coral::executor_mode;
using coral::actors::topology;

/// What run_pipeline() builds: the sampler's shape, the replay's settings
/// and the counter env's episode length.
struct pipeline_setup {
  topology topo = topology::pool;
  executor_mode mode = executor_mode::threads;
  std::size_t n_step = 3;
  std::uint64_t steps = 4000;        ///< env steps the feeder forwards before it ends the run
  bool env_fails = false;            ///< env 1 throws on its 45th step and is reset
  std::size_t num_envs = 4;
  std::size_t envs_per_group = 1;
  std::size_t batch_size = 0;        ///< envs per batch; 0: the topology's default
  bool dynamic_batching = false;     ///< act on one group once the batch timeout (0) passed
  std::int64_t episode_length = 7;
  std::uint64_t min_size = 32;       ///< the replay's learning start, in env steps
  double ratio = 4.0;                ///< samples per insert
  std::size_t replay_batch = 16;
  std::size_t prefetch = 3;
  std::uint64_t snapshot_every = 0;  ///< the learner asks for a snapshot every this many batches; 0: never
};

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
  replay_actor_config config;
  std::vector<coral::replay::replay_snapshot> snapshots;  ///< in the order asked for
};

pipeline_result run_pipeline(const pipeline_setup& p) {
  coral::test::counter_env::register_once();
  coral::actors::sampler_options so;
  so.env = "test-counter";
  so.env_args = {{"episode_length", std::to_string(p.episode_length)}};
  if (p.env_fails) {
    // Env 1 throws on its 45th step, in the middle of its 7th episode, and is reset.
    so.env_args.push_back({"fail_env", "1"});
    so.env_args.push_back({"fail_step", "45"});
    so.on_env_error = coral::actors::env_error_policy::reset;
  }
  so.topo = p.topo;
  so.num_envs = p.num_envs;
  so.envs_per_group = p.envs_per_group;
  so.batch_size = p.batch_size;
  so.threads = std::min<std::size_t>(2, p.num_envs / p.envs_per_group);
  so.executor = p.mode;
  so.seed = 11;
  coral::actors::sampler s(so);
  const double gamma = 0.5;
  const std::size_t n_step = p.n_step;
  const auto episode_end = static_cast<float>(p.episode_length);
  coral::actors::inference_batcher::options bo;
  bo.batch_size = s.wires().batch_size;
  if (p.dynamic_batching) bo.min_batch_size = p.envs_per_group;
  replay_actor_config rc;
  rc.buffer = {.capacity = p.num_envs * 64, .num_streams = p.num_envs, .obs_dim = 4, .discrete_action_dim = 1,
               .n_step = n_step};
  rc.samples_per_insert = p.ratio;
  rc.min_size = p.min_size;
  rc.batch_size = p.replay_batch;
  rc.prefetch = p.prefetch;
  rc.max_group_steps = p.envs_per_group;
  rc.batcher_hold = coral::replay::batcher_hold(s.wires(), bo, p.envs_per_group);
  rc.seed = 5;
  replay_actor r(rc);
  pipeline_result out;
  std::atomic<std::uint64_t> episodes{0};
  std::atomic<std::uint64_t> episode_errors{0};  // the callback runs on the batcher's thread
  coral::replay::replay_feeder::options fo;
  fo.n_step = n_step;
  fo.gamma = gamma;
  fo.max_env_steps = p.steps;
  coral::replay::replay_feeder feeder(
      s.batch(), s.group_rows(), r,
      [&](double ret, double len) {
        if (ret != episode_end || len != episode_end) ++episode_errors;
        ++episodes;
        return false;
      },
      fo);
  s.announce_to(feeder.ready());
  auto pol = coral::actors::make_builtin_policy("random", s.action_space(), s.rows(), 7);
  coral::runtime rt({.mode = p.mode});
  rt.on_stop([&] {
    feeder.close();
    r.close();
  });
  s.spawn(rt, *pol, bo, &feeder);
  rt.spawn("replay-feeder", rt.pool("sampling", so.threads),
           feeder.run(s.ready_channels(), [&](auto) { rt.request_stop(); }));
  rt.spawn("replay", rt.pool("replay", 1), r.run());
  auto fail = [&](std::string what) {
    if (out.errors++ == 0) out.first_error = std::move(what);
  };
  std::uint64_t batches = 0;
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
        const bool ended = o2[2] == episode_end;
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
      if (p.snapshot_every != 0 && ++batches % p.snapshot_every == 0) {
        const bool asked = co_await r.inbox().async_send(replay_msg(coral::replay::snapshot_request{batches}));
        if (!asked) co_return;
        auto snap = co_await r.snapshots().async_receive();
        if (!snap) co_return;
        if (snap->tag != batches) fail("a snapshot with another request's tag");
        out.snapshots.push_back(std::move(*snap));
      }
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
  out.config = rc;
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
  const auto r = run_pipeline({.topo = t, .mode = mode, .n_step = n});
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
  const auto r = run_pipeline({.topo = topology::pool, .mode = mode, .n_step = 3, .env_fails = true});
  INFO(r.first_error);
  CHECK(r.errors == 0);
  CHECK(r.checked > 1000);
  CHECK(r.env_steps >= 4000);
  CHECK(r.cuts == 1);
}


namespace {

/// Every setup of the liveness grid: each topology with groups of one and of
/// two envs (pool with and without dynamic batching), learning starts from 0
/// (nothing sampleable yet) to past the first complete transitions, ratios
/// well below and above one batch per env step, batches of one and of many,
/// one and several requests in flight. Episodes are long (1000 steps), so no
/// episode end completes a transition early.
std::vector<pipeline_setup> liveness_grid(executor_mode mode) {
  struct shape {
    std::size_t envs, per_group, pool_batch;
  };
  const shape shapes[] = {{1, 1, 0}, {4, 1, 2}, {8, 2, 4}};
  std::vector<pipeline_setup> grid;
  for (const auto t : {topology::sync, topology::double_buffer, topology::pool}) {
    for (const auto& sh : shapes) {
      for (const bool dynamic : {false, true}) {
        if (dynamic && t != topology::pool) continue;
        coral::actors::sampler_options so;
        so.topo = t;
        so.num_envs = sh.envs;
        so.envs_per_group = sh.per_group;
        so.batch_size = t == topology::pool ? sh.pool_batch : 0;
        try {
          (void)coral::actors::resolve_wiring(so);
        } catch (const coral::config_error&) {
          continue;  // not a wiring of this topology (one env in double-buffer or pool)
        }
        for (const std::uint64_t starts : {0, 1, 32}) {
          for (const double ratio : {0.25, 4.0, 32.0}) {
            for (const std::size_t batch : {1, 32}) {
              for (const std::size_t prefetch : {1, 3}) {
                grid.push_back({.topo = t, .mode = mode, .n_step = 3, .steps = 300, .num_envs = sh.envs,
                                .envs_per_group = sh.per_group, .batch_size = so.batch_size,
                                .dynamic_batching = dynamic, .episode_length = 1000, .min_size = starts,
                                .ratio = ratio, .replay_batch = batch, .prefetch = prefetch});
              }
            }
          }
        }
      }
    }
  }
  return grid;
}

std::string describe(const pipeline_setup& p) {
  return fmt::format("{} {}, {} envs in groups of {}, batch {}{}, learning starts {}, ratio {}, replay batch {}, "
                     "prefetch {}",
                     coral::actors::to_string(p.topo), p.mode == executor_mode::single ? "single" : "threads",
                     p.num_envs, p.envs_per_group, p.batch_size,
                     p.dynamic_batching ? " (dynamic)" : "", p.min_size, p.ratio, p.replay_batch, p.prefetch);
}

void check_liveness(executor_mode mode) {
  const auto grid = liveness_grid(mode);
  CHECK(grid.size() > 300);
  for (const auto& p : grid) {
    const std::string what = describe(p);
    INFO(what);
    // A run that deadlocks ends the process here, naming its setup.
    coral::test::watchdog dog("replay pipeline liveness: " + what, 20s);
    const auto r = run_pipeline(p);
    INFO(r.first_error);
    REQUIRE(r.errors == 0);
    REQUIRE(r.env_steps >= p.steps);
    REQUIRE(r.sampled > 0);
    const double diff = static_cast<double>(r.inserted) * p.ratio - static_cast<double>(r.sampled);
    REQUIRE(diff >= r.min_diff);
  }
}

}  // namespace

TEST_CASE("the sampling side or the learner can always move: no setup of the grid deadlocks (single executor)",
          "[replay][actor][pipeline][liveness]") {
  check_liveness(executor_mode::single);
}

TEST_CASE("the sampling side or the learner can always move: no setup of the grid deadlocks (threads)",
          "[replay][actor][pipeline][liveness][stress]") {
  check_liveness(executor_mode::threads);
}

TEST_CASE("snapshots taken while sampler, feeder and learner run load into a fresh replay actor, in order",
          "[replay][actor][pipeline][snapshot]") {
  coral::test::watchdog dog("replay pipeline with snapshots", 120s);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  CAPTURE(mode == executor_mode::single ? "single" : "threads");
  const auto r = run_pipeline({.topo = topology::pool, .mode = mode, .n_step = 3, .snapshot_every = 25});
  INFO(r.first_error);
  CHECK(r.errors == 0);
  REQUIRE(r.snapshots.size() >= 5);
  std::uint64_t inserts = 0;
  std::uint64_t samples = 0;
  for (const auto& snap : r.snapshots) {
    replay_actor copy(r.config);
    copy.load(snap.state);
    // Each copy is a state the actor went through: later ones have seen more.
    CHECK(copy.limiter().inserts() >= inserts);
    CHECK(copy.limiter().samples() > samples);
    // Asked for after the learner handed back batch `tag`; the actor may have served the prefetched ones too.
    CHECK(copy.limiter().samples() >= snap.tag * r.config.batch_size);
    CHECK(copy.limiter().samples() <= (snap.tag + r.config.prefetch) * r.config.batch_size);
    CHECK(copy.buffer().size() > 0);
    inserts = copy.limiter().inserts();
    samples = copy.limiter().samples();
  }
  CHECK(inserts <= r.inserted);
}
