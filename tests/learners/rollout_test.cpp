#include "coral/learners/rollout.hpp"

#include <memory>
#include <string>
#include <vector>

#include <asio/use_awaitable.hpp>
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../actors/counter_env.hpp"
#include "../support/watchdog.hpp"
#include "coral/actors/inference_batcher.hpp"
#include "coral/actors/sampler_options.hpp"
#include "coral/core/runtime.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"
#include "coral/learners/frame_stack.hpp"

using namespace coral;
using namespace coral::learners;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t episode_length = 5;

/// Acts with action = steps taken mod 4, log probability = steps taken and
/// value = steps in the episode (observation entries 1 and 2), so that a
/// segment shows which observation every action was chosen from.
class echo_policy final : public actors::policy {
 public:
  void act(const actors::policy_rows& rows) override {
    for (const auto& range : rows.ranges) {
      for (auto r = range.first; r < range.first + range.count; ++r) {
        const auto obs = rows.batch.observations().row(r);
        rows.batch.discrete_actions().row(r)[0] = static_cast<std::int32_t>(obs[1]) % 4;
        rows.log_probs[r] = obs[1];
        rows.values[r] = obs[2];
      }
    }
  }
  void load_weights(std::span<const float>) override {}
};

struct run_report {
  std::size_t segments = 0;
  std::uint64_t max_lag = 0;
  std::string error;  // the first mismatch (Catch2 assertions are for the test's own thread)
};

/// Wires test-counter envs, the assembler and the batcher like coral train
/// does, with a fake learner that checks every segment and publishes a new
/// version for each; stops after `segments` segments.
run_report run_pipeline(actors::topology topo, executor_mode mode, std::size_t lag, std::size_t segments,
                        std::size_t envs_per_group = 2, std::size_t batch_size = 0) {
  test::counter_env::register_once();
  actors::sampler_options so;
  so.env = "test-counter";
  so.env_args = {{"episode_length", std::to_string(episode_length)}};
  so.topo = topo;
  so.num_envs = 8;
  so.envs_per_group = envs_per_group;
  so.batch_size = batch_size;
  so.threads = 2;
  so.executor = mode;
  const auto w = actors::resolve_wiring(so);
  const std::size_t T = 7;  // not a multiple of the episode length: episodes cross segments

  auto probe = envs::registry::global().make(so.env, so.env_args, 0, 0);
  envs::env_batch batch(so.num_envs, probe->observation_space(), probe->action_space());
  latest<std::vector<float>> weights;
  const auto base = weights.publish({0.0f});
  training_stats stats;
  rollout_assembler::options ao;
  ao.horizon = T;
  ao.max_policy_lag = lag;
  std::vector<actors::row_range> rows;
  const auto k = static_cast<std::uint32_t>(envs_per_group);
  for (std::size_t g = 0; g < w.groups; ++g) rows.push_back({static_cast<std::uint32_t>(k * g), k});
  rollout_assembler assembler(batch, rows, weights, stats, ao);

  std::vector<std::unique_ptr<channel<actors::ready_msg>>> ready;
  std::vector<channel<actors::ready_msg>*> ready_ptrs;
  for (std::size_t c = 0; c < w.ready_channels; ++c) {
    ready.push_back(std::make_unique<channel<actors::ready_msg>>(w.groups));
    ready_ptrs.push_back(ready.back().get());
  }
  std::vector<std::unique_ptr<actors::env_group>> groups;
  std::vector<actors::env_group*> group_ptrs;
  for (std::size_t g = 0; g < w.groups; ++g) {
    envs::env_slice slice(batch, k * g, envs::registry::global().make_many(so.env, so.env_args, 0, k * g, k));
    groups.push_back(std::make_unique<actors::env_group>("env-group-" + std::to_string(g),
                                                         static_cast<std::uint32_t>(g), k * g, std::move(slice),
                                                         assembler.ready(), actors::env_error_policy::fail));
    group_ptrs.push_back(groups.back().get());
  }
  echo_policy policy;
  actors::inference_batcher batcher(ready_ptrs, group_ptrs, policy, batch, gated_batcher_options(so, w), &assembler,
                                    &weights);

  run_report report;
  auto fail = [&](const std::string& what) {
    if (report.error.empty()) report.error = what;
  };
  runtime rt({.mode = mode});
  rt.on_stop([&] {
    batcher.close_all();
    assembler.close();
  });
  auto ex = rt.pool("sampling", 2);
  for (auto& g : groups) rt.spawn(g->name(), ex, g->run());
  rt.spawn("inference-batcher", ex, batcher.run());
  rt.spawn("rollout-assembler", ex, assembler.run(ready_ptrs, [&](finish_reason) { rt.request_stop(); }));
  rt.spawn("learner", rt.pool("learner", 1), [&]() -> asio::awaitable<void> {
    for (;;) {
      auto seg = co_await assembler.segments().async_receive();
      if (!seg) co_return;
      const auto& s = **seg;
      const std::uint64_t k = report.segments;
      if (s.index != k || s.rows != 8 || s.horizon != T) fail(fmt::format("segment {}: wrong shape", k));
      const auto version = weights.version();
      for (std::size_t r = 0; r < s.rows; ++r) {
        for (std::size_t t = 0; t <= T; ++t) {
          const float* obs = s.observations.data() + (r * (T + 1) + t) * 4;
          auto expect = [&](bool ok, const char* what) {
            if (!ok) fail(fmt::format("segment {} row {} step {}: {}", k, r, t, what));
          };
          expect(obs[0] == static_cast<float>(r), "observation of the row's own env");
          expect(obs[1] == static_cast<float>(k * T + t), "observation k*T + t (bootstrap included)");
          if (t == T) continue;
          const std::size_t i = r * T + t;
          expect(s.log_probs[i] == obs[1] && s.values[i] == obs[2], "log_prob/value chosen from this observation");
          expect(s.discrete_actions[i] == static_cast<std::int32_t>(k * T + t) % 4, "the action chosen");
          expect(s.rewards[i] == 1.0f, "the reward of this action");
          expect(s.terminated[i] == (obs[2] + 1 == episode_length ? 1 : 0), "terminated by this action");
          expect(s.truncated[i] == 0, "never truncated");
          if (s.terminated[i] == 0) expect(obs[4 + 3] == static_cast<float>(s.discrete_actions[i]), "next obs shows the action");
          expect(s.policy_versions[i] <= version, "version not from the future");
          if (s.policy_versions[i] <= version) report.max_lag = std::max(report.max_lag, version - s.policy_versions[i]);
          if (lag == 0) expect(s.policy_versions[i] == base + k, "acted on by version base + k");
        }
      }
      if (++report.segments == segments) {
        rt.request_stop();
        co_return;
      }
      weights.publish({static_cast<float>(k + 1)});
      const bool sent = co_await assembler.ready().async_send(actors::ready_msg{rollout_assembler::published});
      if (!sent) co_return;
    }
  });
  rt.run();
  return report;
}

}  // namespace

TEST_CASE("segments hold each row's steps in order with the outcome of each action", "[learners][rollout]") {
  coral::test::watchdog dog("rollout pipeline", 60s);
  for (auto topo : {actors::topology::sync, actors::topology::double_buffer, actors::topology::pool}) {
    for (auto mode : {executor_mode::single, executor_mode::threads}) {
      INFO("topology " << actors::to_string(topo) << (mode == executor_mode::single ? " single" : " threads"));
      const auto r = run_pipeline(topo, mode, 0, 12);
      CHECK(r.error.empty());
      CHECK(r.segments == 12);
      CHECK(r.max_lag == 0);  // strictly on-policy
    }
  }
}

TEST_CASE("a pool batch of several groups does not stall at segment boundaries", "[learners][rollout]") {
  // 8 groups of 1, batches of 3 groups: at a boundary the last groups of a
  // segment are fewer than a batch while the rest wait for new weights.
  coral::test::watchdog dog("rollout pipeline", 60s);
  for (auto mode : {executor_mode::single, executor_mode::threads}) {
    for (std::size_t batch : {2, 3, 6}) {
      INFO("batch " << batch << (mode == executor_mode::single ? " single" : " threads"));
      const auto r = run_pipeline(actors::topology::pool, mode, 0, 12, 1, batch);
      CHECK(r.error.empty());
      CHECK(r.segments == 12);
      CHECK(r.max_lag == 0);
    }
  }
}

TEST_CASE("with a policy lag bound of 2 no step is more than 2 versions stale", "[learners][rollout]") {
  coral::test::watchdog dog("rollout pipeline", 60s);
  for (auto topo : {actors::topology::sync, actors::topology::pool}) {
    for (auto mode : {executor_mode::single, executor_mode::threads}) {
      const auto r = run_pipeline(topo, mode, 2, 12);
      CHECK(r.error.empty());
      CHECK(r.segments == 12);
      CHECK(r.max_lag <= 2);
    }
  }
}

TEST_CASE("a frame stack shifts in observations and restarts with zeros", "[learners][rollout]") {
  frame_stack fs(2, 2, 3);
  const float a[] = {1, 2}, b[] = {3, 4}, c[] = {5, 6};
  fs.push(1, a);
  fs.push(1, b);
  auto row = fs.row(1);
  CHECK(std::vector<float>(row.begin(), row.end()) == std::vector<float>{0, 0, 1, 2, 3, 4});
  std::vector<float> peek(6);
  fs.peek(1, c, peek);
  CHECK(peek == std::vector<float>{1, 2, 3, 4, 5, 6});
  row = fs.row(1);
  CHECK(std::vector<float>(row.begin(), row.end()) == std::vector<float>{0, 0, 1, 2, 3, 4});  // peek changed nothing
  fs.restart(1);
  row = fs.row(1);
  CHECK(std::vector<float>(row.begin(), row.end()) == std::vector<float>(6, 0.0f));
  row = fs.row(0);
  CHECK(std::vector<float>(row.begin(), row.end()) == std::vector<float>(6, 0.0f));
}
