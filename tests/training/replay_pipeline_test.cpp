// The replay side of the training composition: the real replay feeder, rate
// limit gate and replay actor, plugged into training_run as "test-replay"
// with a random policy and a learner that checks every sampled transition.

#include "coral/training/training_run.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../actors/counter_env.hpp"
#include "../support/watchdog.hpp"
#include "coral/actors/builtin_policy.hpp"
#include "coral/actors/gate.hpp"
#include "coral/core/error.hpp"
#include "coral/training/algorithm.hpp"
#include "coral/training/rate_limit_gate.hpp"
#include "coral/replay/replay_actor.hpp"
#include "coral/training/replay_feeder.hpp"
#include "coral/training/algorithm_descriptor.hpp"

using namespace std::chrono_literals;
using coral::executor_mode;
using coral::actors::topology;
using coral::replay::replay_actor;
using coral::replay::replay_actor_config;
using coral::replay::replay_msg;

namespace {

/// What run_pipeline() builds: the sampler's shape, the replay's settings
/// and the counter env's episode length.
struct pipeline_setup {
  topology topo = topology::pool;
  executor_mode mode = executor_mode::threads;
  std::size_t n_step = 3;
  std::uint64_t steps = 4000;        ///< env steps the run takes (--total-steps)
  bool env_fails = false;            ///< env 1 throws on its 45th step and is reset
  std::size_t num_envs = 4;
  std::size_t envs_per_group = 1;
  std::size_t batch_size = 0;        ///< envs per batch; 0: the topology's default
  bool dynamic_batching = false;     ///< act on one group once the batch timeout (1 us) passed
  std::int64_t episode_length = 7;
  std::uint64_t min_size = 32;       ///< the replay's learning start, in env steps
  double ratio = 4.0;                ///< samples per insert
  std::size_t replay_batch = 16;
  std::size_t prefetch = 3;
  std::uint64_t snapshot_every = 0;  ///< the learner asks for a snapshot every this many batches; 0: never
};

/// What the run and the checking learner saw.
struct replay_pipeline_result {
  std::uint64_t env_steps = 0;
  bool interrupted = false;
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

constexpr double discount = 0.5;  // the n-step returns' gamma

/// The replay actor's settings for `p` over `s`; the batcher hold from the
/// batcher options the composition uses (as the DQN plug-in computes it).
replay_actor_config replay_config(const pipeline_setup& p, const coral::training::train_options& o,
                                  coral::actors::sampler& s) {
  replay_actor_config rc;
  rc.buffer = {.capacity = p.num_envs * 64, .num_streams = p.num_envs, .obs_dim = 4, .discrete_action_dim = 1,
               .n_step = p.n_step};
  rc.samples_per_insert = p.ratio;
  rc.min_size = p.min_size;
  rc.batch_size = p.replay_batch;
  rc.prefetch = p.prefetch;
  rc.max_group_steps = p.envs_per_group;
  rc.batcher_hold =
      coral::training::batcher_hold(s.wires(), coral::actors::batcher_options_behind_gate(o.sampler, s.wires()));
  rc.seed = 5;
  return rc;
}

/// "test-replay": DQN's sampling side as the composition runs it (the real
/// replay_feeder as step consumer, the real rate_limit_gate, the real
/// replay actor) with a random policy and a learner that checks every
/// sampled n-step transition of the counter env against what must be true,
/// hands each batch back with TD errors, and asks for snapshots as a
/// checkpoint would.
class checked_replay final : public coral::training::algorithm {
 public:
  checked_replay(const coral::training::train_options& o, coral::actors::sampler& s, pipeline_setup p,
                 std::shared_ptr<replay_pipeline_result> out)
      : sampler_(&s), setup_(p), out_(std::move(out)), replay_(replay_config(p, o, s)) {}

  std::string signature() const override { return "test-replay"; }
  std::string restore(const coral::training::checkpoint&) override { return {}; }

  void start(coral::training::training_run& run) override {
    run.weights().publish({0.0f});
    const auto episode_end = static_cast<double>(setup_.episode_length);
    feeder_ = std::make_unique<coral::training::replay_feeder>(
        sampler_->batch(), replay_,
        [this, &run, episode_end](double ret, double len) {
          if (ret != episode_end || len != episode_end) ++episode_errors_;
          ++episodes_;
          run.episode(ret, len);
        },
        coral::training::replay_feeder::options{.n_step = setup_.n_step, .gamma = discount});
    gate_ = std::make_unique<coral::training::rate_limit_gate>(replay_, run.gate());
    policy_ = coral::actors::make_builtin_policy("random", sampler_->action_space(), sampler_->rows(), 7);
  }
  coral::actors::policy& policy() override { return *policy_; }
  coral::actors::step_consumer& consumer() override { return *feeder_; }
  coral::actors::gate_policy& gate_policy() override { return *gate_; }

  void spawn(coral::runtime& rt, coral::training::training_run& run) override {
    rt.spawn("replay", rt.pool("replay", 1), replay_.run());
    rt.spawn("learner", rt.pool("learner", 1), learn(run));
  }
  void close() noexcept override { replay_.close(); }
  /// As the DQN plug-in does: inserts still in flight are applied.
  void finish() override {
    replay_.drain();
    auto& out = *out_;
    out.transitions = replay_.stats().transitions.load();
    out.sampled = replay_.stats().sampled.load();
    out.inserted = replay_.stats().env_steps.load();
    out.episodes = episodes_.load();
    if (episode_errors_.load() > 0) fail("an episode's return or length is wrong");
    out.cuts = replay_.stats().cuts.load();
    out.min_diff = replay_.limiter().min_diff();
    out.max_diff = replay_.limiter().max_diff();
    out.config = replay_.config();
  }

  std::string describe_setup() const override { return "checking every sampled transition"; }
  void describe(std::string& out) override {
    const auto& rs = replay_.stats();
    out += fmt::format(
        "  replay: {} message(s) in its inbox, {} batch(es) waiting for the learner, {} request(s) held, {} env steps "
        "inserted, {} sampled, {} sampleable, allowance {} (steps in flight {})\n",
        replay_.inbox().size(), replay_.samples().size(), rs.waiting_requests.load(), rs.env_steps.load(),
        rs.sampled.load(), rs.size.load(), replay_.insert_allowance(), replay_.steps_in_flight());
  }
  std::string_view columns() const override { return "checked"; }
  std::string row(coral::training::row_stream stream, const coral::training::stats_snapshot&, double) override {
    return stream == coral::training::row_stream::metrics ? "0" : "checking";
  }
  asio::awaitable<bool> snapshot(coral::training::checkpoint& c) override {
    final_state(c);
    co_return true;
  }
  void final_state(coral::training::checkpoint& c) override { c.learner.updates = updates_; }
  std::uint64_t updates() const override { return updates_; }

 private:
  void fail(std::string what) {
    if (out_->errors++ == 0) out_->first_error = std::move(what);
  }

  /// The learner: keeps `prefetch` requests in flight and checks each batch.
  asio::awaitable<void> learn(coral::training::training_run& run) {
    const auto& rc = replay_.config();
    const std::size_t n_step = setup_.n_step;
    const auto episode_end = static_cast<float>(setup_.episode_length);
    auto& out = *out_;
    for (std::size_t i = 0; i < rc.prefetch; ++i) {
      const bool sent = co_await replay_.inbox().async_send(replay_msg(replay_.make_request()));
      if (!sent) co_return;
    }
    for (;;) {
      auto got = co_await replay_.samples().async_receive();
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
        if (!ended && b->discounts[i] != static_cast<float>(std::pow(discount, k))) fail("discount is not gamma^k");
        double ret = 0;
        for (std::size_t j = 0; j < k; ++j) ret += std::pow(discount, j);
        if (std::abs(b->returns[i] - ret) > 1e-5) fail("n-step return is wrong");
        if (o2[2] != o[2] + static_cast<float>(k)) fail("next observation is not k steps later in the episode");
        ++out.checked;
      }
      b->td_errors.assign(b->size, 1.0f);
      const bool sent = co_await replay_.inbox().async_send(replay_msg(std::move(b)));
      if (!sent) co_return;
      ++updates_;
      if (setup_.snapshot_every != 0 && updates_ % setup_.snapshot_every == 0) {
        const bool asked = co_await replay_.inbox().async_send(replay_msg(coral::replay::snapshot_request{updates_}));
        if (!asked) co_return;
        auto snap = co_await replay_.snapshots().async_receive();
        if (!snap) co_return;
        if (snap->tag != updates_) fail("a snapshot with another request's tag");
        out.snapshots.push_back(std::move(*snap));
      }
      const bool going = co_await run.updated({}, updates_, run.gate().env_steps());
      if (!going) co_return;
    }
  }

  coral::actors::sampler* sampler_;
  pipeline_setup setup_;
  std::shared_ptr<replay_pipeline_result> out_;
  replay_actor replay_;
  std::unique_ptr<coral::training::replay_feeder> feeder_;
  std::unique_ptr<coral::training::rate_limit_gate> gate_;
  std::unique_ptr<coral::actors::policy> policy_;
  std::atomic<std::uint64_t> episodes_{0};
  std::atomic<std::uint64_t> episode_errors_{0};  // the callback runs on the gate's or the batcher's actor
  std::uint64_t updates_ = 0;                     // batches handed back (the learner's)
};

/// The options `coral train` would take for `p`, with --algo test-replay.
coral::training::train_options options_for(const pipeline_setup& p) {
  coral::training::train_options o;
  o.algo = "test-replay";
  auto& so = o.sampler;
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
  if (p.dynamic_batching) {
    // The composition refuses a minimum batch without a timeout: the shortest there is.
    so.min_batch_size = p.envs_per_group;
    so.batch_timeout = std::chrono::microseconds(1);
  }
  so.threads = std::min<std::size_t>(2, p.num_envs / p.envs_per_group);
  so.executor = p.mode;
  so.seed = 11;
  o.total_steps = p.steps;
  o.stop_when_solved = false;
  o.progress_seconds = 0;
  return o;
}

/// Runs the training composition with "test-replay" over test-counter envs.
replay_pipeline_result run_pipeline(const pipeline_setup& p) {
  coral::test::counter_env::register_once();
  auto out = std::make_shared<replay_pipeline_result>();
  coral::training::register_algorithm(
      "test-replay", [p, out](const coral::training::train_options& o, coral::actors::sampler& s) {
        return std::make_unique<checked_replay>(o, s, p, out);
      });
  std::ostringstream progress;
  const auto r = coral::training::training_run(options_for(p), progress).run();
  out->env_steps = r.env_steps;
  out->interrupted = r.interrupted;
  return std::move(*out);
}

}  // namespace

TEST_CASE("sampler, feeder and replay actor deliver correct n-step transitions under the rate limit in every topology",
          "[training][replay][pipeline]") {
  coral::test::watchdog dog("replay pipeline", 120s);
  auto t = GENERATE(topology::sync, topology::double_buffer, topology::pool);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  auto n = GENERATE(std::size_t{1}, std::size_t{3});
  CAPTURE(coral::actors::to_string(t), coral::to_string(mode), n);
  const auto r = run_pipeline({.topo = t, .mode = mode, .n_step = n});
  INFO(r.first_error);
  CHECK(r.errors == 0);
  CHECK(r.checked > 1000);
  CHECK(r.env_steps == 4000);  // the gate ends the run at --total-steps exactly
  CHECK_FALSE(r.interrupted);
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

TEST_CASE("an env reset after a failure cuts its replay stream: no transition spans the reset",
          "[training][replay][pipeline]") {
  coral::test::watchdog dog("replay pipeline with a failing env", 120s);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  CAPTURE(coral::to_string(mode));
  const auto r = run_pipeline({.topo = topology::pool, .mode = mode, .n_step = 3, .env_fails = true});
  INFO(r.first_error);
  CHECK(r.errors == 0);
  CHECK(r.checked > 1000);
  CHECK(r.env_steps == 4000);
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
                     coral::actors::to_string(p.topo), coral::to_string(p.mode),
                     p.num_envs, p.envs_per_group, p.batch_size, p.dynamic_batching ? " (dynamic)" : "", p.min_size,
                     p.ratio, p.replay_batch, p.prefetch);
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
    REQUIRE(r.env_steps == p.steps);
    REQUIRE_FALSE(r.interrupted);
    REQUIRE(r.sampled > 0);
    const double diff = static_cast<double>(r.inserted) * p.ratio - static_cast<double>(r.sampled);
    REQUIRE(diff >= r.min_diff);
  }
}

}  // namespace

TEST_CASE("the sampling side or the learner can always move: no setup of the grid deadlocks (single executor)",
          "[training][replay][pipeline][liveness][one-thread]") {
  check_liveness(executor_mode::single);
}

TEST_CASE("the sampling side or the learner can always move: no setup of the grid deadlocks (threads)",
          "[training][replay][pipeline][liveness][stress]") {
  check_liveness(executor_mode::threads);
}

TEST_CASE("snapshots taken while sampler, feeder and learner run load into a fresh replay actor, in order",
          "[training][replay][pipeline][snapshot]") {
  coral::test::watchdog dog("replay pipeline with snapshots", 120s);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  CAPTURE(coral::to_string(mode));
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
