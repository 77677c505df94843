// R2D2's sampling and replay side in the training composition, torch-free
// (so ThreadSanitizer runs it): the real sequence feeder, rate-limit gate and
// sequence replay actor, plugged into training_run as "test-sequences" with a
// random policy that reports a recurrent state, and a learner that checks
// every sampled sequence against the counter env.

#include "coral/training/training_run.hpp"

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
#include "coral/training/algorithm.hpp"
#include "coral/training/rate_limit_gate.hpp"
#include "coral/training/sequence_feeder.hpp"
#include "coral/replay/sequence_replay_actor.hpp"
#include "coral/training/algorithm_descriptor.hpp"

using namespace std::chrono_literals;
using coral::executor_mode;
using coral::actors::topology;
namespace replay = coral::replay;
namespace training = coral::training;

namespace {

struct sequence_setup {
  topology topo = topology::pool;
  executor_mode mode = executor_mode::threads;
  std::uint64_t steps = 3000;
  std::size_t num_envs = 4;
  std::size_t envs_per_group = 1;
  std::size_t batch_size = 0;      ///< envs per batch; 0: the topology's default
  std::int64_t episode_length = 13;
  std::size_t length = 8, burn_in = 3, overlap = 3;
  std::uint64_t min_size = 32;
  double ratio = 2.0;              ///< trained slots per env step
  std::size_t replay_batch = 4;
  std::size_t prefetch = 2;
};

struct sequence_result {
  std::uint64_t env_steps = 0;
  bool interrupted = false;
  std::uint64_t checked = 0;
  std::uint64_t errors = 0;
  std::string first_error;
  std::uint64_t inserted = 0;
  std::uint64_t sampled = 0;
  std::uint64_t sequences = 0;
  double min_diff = 0;
};

/// Random actions; its "recurrent state" before acting on a row is (row,
/// total steps of the observation it acts on), as a recurrent policy's
/// recurrent_states() exposes its state.
class state_reporting_policy final : public coral::actors::policy {
 public:
  state_reporting_policy(const coral::envs::space& actions, std::size_t rows)
      : random_(coral::actors::make_builtin_policy("random", actions, rows, 7)), states(2 * rows, 0.0f) {}
  void act(const coral::actors::policy_rows& rows) override {
    random_->act(rows);
    for (const auto& range : rows.ranges) {
      for (auto r = range.first; r < range.first + range.count; ++r) {
        states[2 * r] = static_cast<float>(r);
        states[2 * r + 1] = rows.batch.observations().row(r)[1];
      }
    }
  }
  void load_weights(std::span<const float>) override {}

 private:
  std::unique_ptr<coral::actors::policy> random_;

 public:
  std::vector<float> states;
};

class checked_sequences final : public training::algorithm {
 public:
  checked_sequences(const training::train_options& o, coral::actors::sampler& s, sequence_setup p,
                    std::shared_ptr<sequence_result> out)
      : sampler_(&s), setup_(p), out_(std::move(out)), replay_(config(p, o, s)) {}

  static replay::sequence_replay_actor_config config(const sequence_setup& p, const training::train_options& o,
                                                     coral::actors::sampler& s) {
    replay::sequence_replay_actor_config rc;
    rc.buffer = {.layout = {.length = p.length, .burn_in = p.burn_in, .overlap = p.overlap, .obs_dim = 4,
                            .discrete_dim = 1, .state_dim = 2},
                 .capacity = 256,
                 .num_streams = p.num_envs};
    rc.samples_per_insert = p.ratio;
    rc.ratio_counts = replay::ratio_unit::trained_steps;
    rc.min_size = p.min_size;
    rc.batch_size = p.replay_batch;
    rc.prefetch = p.prefetch;
    rc.max_group_steps = p.envs_per_group;
    rc.batcher_hold = training::batcher_hold(s.wires(), coral::actors::batcher_options_behind_gate(o.sampler, s.wires()));
    rc.seed = 5;
    return rc;
  }

  std::string signature() const override { return "test-sequences"; }
  std::string restore(const training::checkpoint&) override { return {}; }
  void start(training::training_run& run) override {
    run.weights().publish({0.0f});
    policy_ = std::make_unique<state_reporting_policy>(sampler_->action_space(), sampler_->rows());
    training::sequence_sink sink{.take_block =
                                   [this]() -> std::unique_ptr<replay::sequence_block> {
                                     auto b = replay_.free_blocks().try_receive();
                                     return b ? std::move(*b) : nullptr;
                                   },
                               .send =
                                   [this](std::unique_ptr<replay::sequence_block> b) {
                                     if (!replay_.inbox().try_send(replay::sequence_replay_msg(std::move(b))) &&
                                         !replay_.inbox().is_closed()) {
                                       fail("the sequence replay's inbox was full");
                                     }
                                   }};
    feeder_ = std::make_unique<training::sequence_feeder>(sampler_->batch(), replay_.buffer().config().layout,
                                                        std::move(sink),
                                                        [&run](double r, double l) { run.episode(r, l); });
    feeder_->record_states_from(policy_->states);
    gate_ = std::make_unique<training::rate_limit_gate>(replay_, run.gate());
  }
  coral::actors::policy& policy() override { return *policy_; }
  coral::actors::step_consumer& consumer() override { return *feeder_; }
  coral::actors::gate_policy& gate_policy() override { return *gate_; }
  void spawn(coral::runtime& rt, training::training_run& run) override {
    rt.spawn("replay", rt.pool("replay", 1), replay_.run());
    rt.spawn("learner", rt.pool("learner", 1), learn(run));
  }
  void close() noexcept override { replay_.close(); }
  void finish() override {
    replay_.drain();
    auto& out = *out_;
    out.inserted = replay_.stats().env_steps.load();
    out.sampled = replay_.stats().sampled.load();
    out.sequences = replay_.stats().sequences.load();
    out.min_diff = replay_.limiter().min_diff();
  }
  std::string describe_setup() const override { return "checking every sampled sequence"; }
  std::string_view columns() const override { return "checked"; }
  std::string row(training::row_stream stream, const training::stats_snapshot&, double) override {
    return stream == training::row_stream::metrics ? "0" : "checking";
  }
  asio::awaitable<bool> snapshot(training::checkpoint& c) override {
    final_state(c);
    co_return true;
  }
  void final_state(training::checkpoint& c) override { c.learner.updates = updates_; }
  std::uint64_t updates() const override { return updates_; }

 private:
  void fail(std::string what) {
    if (out_->errors++ == 0) out_->first_error = std::move(what);
  }

  /// Checks sequence i of `b` against the counter env: observation =
  /// [env, total steps, steps in episode, last action].
  void check(const replay::sequence_batch& b, std::size_t i) {
    const auto& l = b.layout;
    const auto L = l.length;
    const float* obs = b.observations.data() + i * l.observation_floats();
    const std::uint8_t* flags = b.flags.data() + i * L;
    const float* state = b.states.data() + i * 2;
    auto bad = [&](const std::string& what) { fail(fmt::format("sequence {}: {}", i, what)); };
    std::size_t first = L;
    for (std::size_t t = 0; t < L; ++t) {
      if ((flags[t] & replay::slot_valid) != 0) {
        first = std::min(first, t);
      } else if (std::any_of(obs + t * 4, obs + t * 4 + 4, [](float x) { return x != 0.0f; }) && t < first) {
        bad("padding before the episode is not zeros");
      }
    }
    if (first == L) return bad("no valid slot");
    const float env = obs[first * 4];
    std::size_t last = first;
    for (std::size_t t = first; t < L && (flags[t] & replay::slot_valid) != 0; ++t) last = t;
    for (std::size_t t = first; t <= last; ++t) {
      const float* o = obs + t * 4;
      if (o[0] != env) bad("slots from two envs");
      if (o[1] != obs[first * 4 + 1] + static_cast<float>(t - first)) bad("slots not consecutive steps");
      const bool starts = o[2] == 0.0f;
      if (starts != ((flags[t] & replay::slot_first) != 0)) bad("slot_first does not mark the episode's step 0");
      if (starts && t != first) bad("two episodes in one sequence");
      const bool ends = o[2] + 1 == static_cast<float>(setup_.episode_length);
      if (ends != ((flags[t] & replay::slot_terminated) != 0)) bad("slot_terminated not on the episode's last step");
      if (t > first && b.actions[i * L + t - 1] != static_cast<std::int32_t>(o[3])) bad("action not the one taken");
      if (b.rewards[i * L + t] != 1.0f) bad("reward not the env's");
    }
    for (std::size_t t = last + 1; t < L; ++t) {
      if (flags[t] != 0) bad("a valid slot after the sequence's end");
    }
    // The bootstrap slot of a sequence cut mid-episode: the next observation.
    if (last == L - 1 && (flags[last] & replay::slot_terminated) == 0) {
      const float* next = obs + L * 4;
      if (next[0] != env || next[1] != obs[last * 4 + 1] + 1) bad("slot L is not the next observation");
    }
    // The state the policy reported before the first valid slot, zeros at an episode's start.
    const bool at_start = obs[first * 4 + 2] == 0.0f;
    const float want_row = at_start ? 0.0f : env;
    const float want_step = at_start ? 0.0f : obs[first * 4 + 1];
    if (state[0] != want_row || state[1] != want_step) {
      bad(fmt::format("state ({}, {}), not the policy's at the first valid slot ({}, {})", state[0], state[1], want_row,
                      want_step));
    }
    // The trained part holds a valid slot.
    if (last < l.burn_in) bad("no valid slot in the trained part");
    ++out_->checked;
  }

  asio::awaitable<void> learn(training::training_run& run) {
    for (std::size_t i = 0; i < setup_.prefetch; ++i) {
      const bool sent = co_await replay_.inbox().async_send(replay::sequence_replay_msg(replay_.make_request()));
      if (!sent) co_return;
    }
    for (;;) {
      auto got = co_await replay_.samples().async_receive();
      if (!got) co_return;
      auto b = std::move(*got);
      for (std::size_t i = 0; i < b->size; ++i) check(*b, i);
      b->priorities.assign(b->size, 1.0f);
      const bool sent = co_await replay_.inbox().async_send(replay::sequence_replay_msg(std::move(b)));
      if (!sent) co_return;
      ++updates_;
      const bool going = co_await run.updated({}, updates_, run.gate().env_steps());
      if (!going) co_return;
    }
  }

  coral::actors::sampler* sampler_;
  sequence_setup setup_;
  std::shared_ptr<sequence_result> out_;
  replay::sequence_replay_actor replay_;
  std::unique_ptr<state_reporting_policy> policy_;
  std::unique_ptr<training::sequence_feeder> feeder_;
  std::unique_ptr<training::rate_limit_gate> gate_;
  std::uint64_t updates_ = 0;
};

sequence_result run_sequences(const sequence_setup& p) {
  coral::test::counter_env::register_once();
  auto out = std::make_shared<sequence_result>();
  training::register_algorithm("test-sequences",
                               [p, out](const training::train_options& o, coral::actors::sampler& s) {
                                 return std::make_unique<checked_sequences>(o, s, p, out);
                               });
  training::train_options o;
  o.algo = "test-sequences";
  auto& so = o.sampler;
  so.env = "test-counter";
  so.env_args = {{"episode_length", std::to_string(p.episode_length)}};
  so.topo = p.topo;
  so.num_envs = p.num_envs;
  so.envs_per_group = p.envs_per_group;
  so.batch_size = p.batch_size;
  so.threads = std::min<std::size_t>(2, p.num_envs / p.envs_per_group);
  so.executor = p.mode;
  so.seed = 11;
  o.total_steps = p.steps;
  o.stop_when_solved = false;
  o.progress_seconds = 0;
  std::ostringstream progress;
  const auto r = training::training_run(o, progress).run();
  out->env_steps = r.env_steps;
  out->interrupted = r.interrupted;
  return std::move(*out);
}

}  // namespace

TEST_CASE("sampler, sequence feeder and sequence replay deliver correct sequences under the rate limit everywhere",
          "[training][replay][sequences][pipeline]") {
  coral::test::watchdog dog("sequence pipeline", 120s);
  auto t = GENERATE(topology::sync, topology::double_buffer, topology::pool);
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  auto shape = GENERATE(std::make_pair<std::size_t, std::size_t>(3, 3), std::make_pair<std::size_t, std::size_t>(0, 4),
                        std::make_pair<std::size_t, std::size_t>(2, 5));  // (burn-in, overlap)
  CAPTURE(coral::actors::to_string(t), coral::to_string(mode), shape.first,
          shape.second);
  const auto r = run_sequences({.topo = t, .mode = mode, .burn_in = shape.first, .overlap = shape.second});
  INFO(r.first_error);
  CHECK(r.errors == 0);
  CHECK(r.checked > 500);
  CHECK(r.env_steps == 3000);
  CHECK_FALSE(r.interrupted);
  // Every env step acted on was counted in at once (no sequence withholds
  // its steps), but for the last batch's when the run closed the replay first.
  CHECK(r.inserted <= r.env_steps);
  CHECK(r.inserted + 4 >= r.env_steps);
  CHECK(r.sequences > 0);
  // The learner got what the ratio allows, never more (sampled sequences × trained slots per env step).
  const double trained = static_cast<double>(8 - shape.first);
  const double diff = static_cast<double>(r.inserted) * 2.0 - static_cast<double>(r.sampled) * trained;
  CHECK(diff >= r.min_diff);
}

TEST_CASE("the sequence pipeline never deadlocks: learning starts, ratios, batches and prefetch across the wirings",
          "[training][replay][sequences][pipeline][liveness]") {
  for (const auto t : {topology::sync, topology::pool}) {
    for (const std::uint64_t starts : {0, 1, 64}) {
      for (const double ratio : {0.25, 8.0}) {
        for (const std::size_t batch : {1, 16}) {
          for (const std::size_t prefetch : {1, 3}) {
            for (const auto mode : {executor_mode::single, executor_mode::threads}) {
              const sequence_setup p{.topo = t, .mode = mode, .steps = 400, .num_envs = 4,
                                     .batch_size = t == topology::pool ? 2u : 0u, .episode_length = 1000,
                                     .min_size = starts, .ratio = ratio, .replay_batch = batch, .prefetch = prefetch};
              const auto what = fmt::format("{} {}, learning starts {}, ratio {}, batch {}, prefetch {}",
                                            coral::actors::to_string(t),
                                            coral::to_string(mode), starts, ratio,
                                            batch, prefetch);
              INFO(what);
              coral::test::watchdog dog("sequence pipeline liveness: " + what, 20s);
              const auto r = run_sequences(p);
              INFO(r.first_error);
              REQUIRE(r.errors == 0);
              REQUIRE(r.env_steps == p.steps);
              REQUIRE_FALSE(r.interrupted);
            }
          }
        }
      }
    }
  }
}
