#include "coral/training/rollout.hpp"

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../actors/counter_env.hpp"
#include "../support/watchdog.hpp"
#include "coral/training/algorithm.hpp"
#include "coral/training/frame_stack.hpp"
#include "coral/training/policy_lag_gate.hpp"
#include "coral/training/training_run.hpp"
#include "coral/training/algorithm_descriptor.hpp"

using namespace coral;
using namespace coral::training;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t episode_length = 5;
constexpr std::size_t horizon = 7;  // not a multiple of the episode length: episodes cross segments

/// Acts with action = steps taken mod 4, log probability = steps taken and
/// value = steps in the episode (observation entries 1 and 2), so that a
/// segment shows which observation every action was chosen from. Its
/// "recurrent state" (two floats per row, as mlp_policy::recurrent_states()
/// exposes it) is (row, steps taken): a segment's initial states show which
/// act() of which row they were taken from.
class echo_policy final : public actors::policy {
 public:
  void act(const actors::policy_rows& rows) override {
    for (const auto& range : rows.ranges) {
      for (auto r = range.first; r < range.first + range.count; ++r) {
        const auto obs = rows.batch.observations().row(r);
        rows.batch.discrete_actions().row(r)[0] = static_cast<std::int32_t>(obs[1]) % 4;
        rows.log_probs[r] = obs[1];
        rows.values[r] = obs[2];
        states[2 * r] = static_cast<float>(r);
        states[2 * r + 1] = obs[1];
      }
    }
  }
  void load_weights(std::span<const float>) override {}
  std::vector<float> states;
};

/// What the checking learner found. Written by the learner actor, read
/// after the run.
struct rollout_report {
  std::size_t segments = 0;
  std::uint64_t max_lag = 0;
  std::string error;  // the first mismatch (Catch2 assertions are for the test's own thread)
};

/// "test-rollout": PPO's acting side as the composition runs it (the real
/// rollout_assembler as step consumer, the real policy_lag_gate) with
/// echo_policy and a learner that checks every segment against what the
/// counter env must have produced, then publishes version base + k + 1 and
/// tells the gate, as the PPO learner does. After `wanted` segments it asks
/// the gate to end the run.
class checked_rollout final : public algorithm {
 public:
  checked_rollout(const train_options& o, actors::sampler& s, std::size_t wanted, std::size_t lag,
                  std::shared_ptr<rollout_report> report)
      : options_(o), sampler_(&s), wanted_(wanted), lag_(lag), report_(std::move(report)) {}

  std::string signature() const override { return "test-rollout"; }
  std::string restore(const checkpoint&) override { return {}; }

  void start(training_run& run) override {
    base_ = run.weights().publish({0.0f});
    assembler_ = std::make_unique<rollout_assembler>(
        sampler_->batch(), sampler_->group_rows(), [&run](double r, double l) { run.episode(r, l); },
        rollout_assembler::options{.horizon = horizon,
                                   .frames = 1,
                                   .segments_in_flight = policy_lag_gate::segments_in_flight(lag_),
                                   .state_dim = 2});
    policy_.states.assign(2 * sampler_->rows(), -1.0f);
    assembler_->record_states_from(policy_.states);
    gate_ = std::make_unique<policy_lag_gate>(*assembler_, run.weights(), lag_);
  }
  actors::policy& policy() override { return policy_; }
  actors::step_consumer& consumer() override { return *assembler_; }
  actors::gate_policy& gate_policy() override { return *gate_; }

  void spawn(runtime& rt, training_run& run) override {
    rt.spawn("learner", rt.pool("learner", 1), [this, &run]() -> asio::awaitable<void> {
      for (;;) {
        auto seg = co_await assembler_->segments().async_receive();
        if (!seg) co_return;
        check(**seg, run.weights().version());
        const std::uint64_t k = report_->segments++;
        if (report_->segments == wanted_) {
          // No new weights: groups at segment `wanted` stay held (lag 0) while the note ends the run.
          run.gate().request_end();
          const bool told = co_await run.tell_gate();
          (void)told;
          co_return;
        }
        ++updates_;
        run.publish({static_cast<float>(k + 1)}, "test-rollout", updates_);
        const bool going = co_await run.updated({}, updates_, (k + 1) * (*seg)->env_steps());
        if (!going) co_return;
        const bool told = co_await run.tell_gate();
        if (!told) co_return;
      }
    });
  }
  void close() noexcept override { assembler_->close(); }

  std::string describe_setup() const override { return "checking every segment"; }
  std::string_view columns() const override { return "segments"; }
  std::string row(row_stream stream, const stats_snapshot&, double) override {
    return stream == row_stream::metrics ? "0" : "checking";
  }
  asio::awaitable<bool> snapshot(checkpoint& c) override {
    final_state(c);
    co_return true;
  }
  void final_state(checkpoint& c) override { c.learner.updates = updates_; }
  std::uint64_t updates() const override { return updates_; }

 private:
  /// Checks segment `s` against the counter env, `version` being the newest weights.
  void check(const rollout_segment& s, std::uint64_t version) {
    auto& report = *report_;
    auto fail = [&](const std::string& what) {
      if (report.error.empty()) report.error = what;
    };
    const std::uint64_t k = report.segments;
    const std::size_t T = horizon;
    if (s.index != k || s.rows != 8 || s.horizon != T) fail(fmt::format("segment {}: wrong shape", k));
    if (s.state_dim != 2 || s.initial_states.size() != 2 * s.rows) fail(fmt::format("segment {}: no states", k));
    for (std::size_t r = 0; r < s.rows && s.initial_states.size() == 2 * s.rows; ++r) {
      // The state the row's policy had when it acted on the segment's step 0.
      if (s.initial_states[2 * r] != static_cast<float>(r) || s.initial_states[2 * r + 1] != static_cast<float>(k * T)) {
        fail(fmt::format("segment {} row {}: initial state ({}, {}), not the row's at step {}", k, r,
                         s.initial_states[2 * r], s.initial_states[2 * r + 1], k * T));
      }
    }
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
        if (lag_ == 0) expect(s.policy_versions[i] == base_ + k, "acted on by version base + k");
      }
    }
  }

  const train_options& options_;
  actors::sampler* sampler_;
  std::size_t wanted_;
  std::size_t lag_;
  std::shared_ptr<rollout_report> report_;
  echo_policy policy_;
  std::uint64_t base_ = 0;
  std::uint64_t updates_ = 0;  // the learner's
  std::unique_ptr<rollout_assembler> assembler_;
  std::unique_ptr<policy_lag_gate> gate_;
};

struct pipeline_result {
  rollout_report report;
  train_result run;
};

/// Runs test-counter envs through the training composition with the
/// "test-rollout" plug-in, as `coral train` wires PPO, until `segments`
/// segments were checked.
pipeline_result run_pipeline(actors::topology topo, executor_mode mode, std::size_t lag, std::size_t segments,
                             std::size_t envs_per_group = 2, std::size_t batch_size = 0) {
  test::counter_env::register_once();
  auto report = std::make_shared<rollout_report>();
  register_algorithm("test-rollout", [segments, report, lag](const train_options& o, actors::sampler& s) {
    return std::make_unique<checked_rollout>(o, s, segments, lag, report);
  });
  train_options o;
  o.algo = "test-rollout";
  o.sampler.env = "test-counter";
  o.sampler.env_args = {{"episode_length", std::to_string(episode_length)}};
  o.sampler.topo = topo;
  o.sampler.num_envs = 8;
  o.sampler.envs_per_group = envs_per_group;
  o.sampler.batch_size = batch_size;
  o.sampler.threads = 2;
  o.sampler.executor = mode;
  // Room for every step the lag bound lets through: the learner ends the run, not the step limit.
  o.total_steps = (segments + lag + 2) * o.sampler.num_envs * horizon;
  o.stop_when_solved = false;
  o.progress_seconds = 0;
  std::ostringstream progress;
  const auto run = training_run(o, progress).run();
  return {*report, run};
}

}  // namespace

TEST_CASE("segments hold each row's steps in order with the outcome of each action", "[training][rollout]") {
  coral::test::watchdog dog("rollout pipeline", 60s);
  for (auto topo : {actors::topology::sync, actors::topology::double_buffer, actors::topology::pool}) {
    for (auto mode : {executor_mode::single, executor_mode::threads}) {
      INFO("topology " << actors::to_string(topo) << " " << coral::to_string(mode));
      const auto r = run_pipeline(topo, mode, 0, 12);
      CHECK(r.report.error.empty());
      CHECK(r.report.segments == 12);
      CHECK(r.report.max_lag == 0);  // strictly on-policy
      CHECK_FALSE(r.run.interrupted);
      CHECK(r.run.env_steps == 12 * 8 * horizon);  // no step of segment 12 without its weights
      CHECK(r.run.updates == 11);
    }
  }
}

TEST_CASE("a pool batch of several groups does not stall at segment boundaries", "[training][rollout]") {
  // 8 groups of 1, batches of 3 groups: at a boundary the last groups of a
  // segment are fewer than a batch while the rest wait for new weights.
  coral::test::watchdog dog("rollout pipeline", 60s);
  for (auto mode : {executor_mode::single, executor_mode::threads}) {
    for (std::size_t batch : {2, 3, 6}) {
      INFO("batch " << batch << " " << coral::to_string(mode));
      const auto r = run_pipeline(actors::topology::pool, mode, 0, 12, 1, batch);
      CHECK(r.report.error.empty());
      CHECK(r.report.segments == 12);
      CHECK(r.report.max_lag == 0);
      CHECK(r.run.env_steps == 12 * 8 * horizon);
    }
  }
}

TEST_CASE("with a policy lag bound of 2 no step is more than 2 versions stale", "[training][rollout]") {
  coral::test::watchdog dog("rollout pipeline", 60s);
  for (auto topo : {actors::topology::sync, actors::topology::pool}) {
    for (auto mode : {executor_mode::single, executor_mode::threads}) {
      INFO("topology " << actors::to_string(topo) << " " << coral::to_string(mode));
      const auto r = run_pipeline(topo, mode, 2, 12);
      CHECK(r.report.error.empty());
      CHECK(r.report.segments == 12);
      CHECK(r.report.max_lag <= 2);
      // The last weights are version base + 11: no group gets past segment 13.
      CHECK(r.run.env_steps <= 14 * 8 * horizon);
    }
  }
}

TEST_CASE("a frame stack shifts in observations and restarts with zeros", "[training][rollout]") {
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
