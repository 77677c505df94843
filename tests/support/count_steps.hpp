#pragma once
/// \file
/// "Count steps, learn nothing": a whole algorithm in one file, to show what
/// a new algorithm takes. Registering it is one line:
///
///     coral::training::register_algorithm(coral::test::count_steps_descriptor());
///
/// Its descriptor declares one setting, `horizon`, which the command line,
/// config files and Python then take like any built-in algorithm's.
/// It acts at random, lets every group step (its gate policy holds nothing),
/// counts the env steps the batcher hands it, and "updates" once per
/// `horizon` steps of every row: its learner publishes weights that hold the
/// update number and reports the update to the run. Its checkpoint state is
/// the counters.

#include <atomic>
#include <chrono>
#include <cstring>
#include <span>
#include <vector>
#include <memory>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "coral/actors/builtin_policy.hpp"
#include "coral/actors/gate.hpp"
#include "coral/actors/policy.hpp"
#include "coral/core/error.hpp"
#include "coral/training/algorithm.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/option_checks.hpp"
#include "coral/training/training_run.hpp"

namespace coral::test {

/// The options of "count": its settings.
struct count_options {
  std::uint64_t horizon = 64;  ///< env steps per row between updates
  /// Steps of each update (learner_activity), each `step_ms` long: a long
  /// update, busy throughout. From the step an update falls due until it
  /// ends, the gate holds every group (as PPO's does at --max-policy-lag 0,
  /// from a full rollout on): env steps stand still, and no second update
  /// queues behind a learner slow to begin the first.
  std::uint64_t update_steps = 1;
  std::uint64_t step_ms = 0;
  /// 1: after the first update, the learner updates again and again on the
  /// same data while the gate holds every group (a replay ratio without bound).
  std::uint64_t same_data = 0;
  /// The learner throws at this update (0: never).
  std::uint64_t fail_update = 0;
  /// Before step k (from 1) of its first update, the learner asks the run to
  /// stop, as SIGINT does (0: never): a stop that lands inside an update.
  std::uint64_t stop_before_step = 0;
};

class count_steps final : public training::algorithm,
                          public training::distribution_part,
                          actors::step_consumer,
                          actors::gate_policy {
 public:
  /// `distributable`: whether it runs distributed (the hooks at the end).
  count_steps(const training::train_options& o, actors::sampler& s, bool distributable = true)
      : options_(o),
        horizon_(training::options_of<count_options>(o).horizon),
        shape_(training::options_of<count_options>(o)),
        sampler_(&s),
        distributable_(distributable),
        policy_(actors::make_builtin_policy("random", s.action_space(), s.rows(), 1)) {}

  std::string signature() const override { return "count"; }
  std::string restore(const training::checkpoint& c) override {
    updates_ = c.learner.updates;
    ended_.store(updates_);
    counted_ = c.learner.env_steps;
    return fmt::format("{} steps counted", counted_.load());
  }

  void start(training::training_run& run) override {
    run_ = &run;
    run.publish_initial({static_cast<float>(updates_)});
  }
  actors::policy& policy() override { return *policy_; }
  actors::step_consumer& consumer() override { return *this; }
  actors::gate_policy& gate_policy() override { return *this; }

  void spawn(runtime& rt, training::training_run& run) override {
    rt.spawn("learner", rt.pool("learner", 1), [this, &run]() -> asio::awaitable<void> {
      for (;;) {
        auto steps = co_await updates_due_.async_receive();
        if (!steps) co_return;
        do {
          ++updates_;
          if (updates_ == shape_.fail_update) throw error(fmt::format("count: failed at update {}", updates_));
          run.activity().begin(updates_, shape_.update_steps);
          for (std::uint64_t k = 0; k < shape_.update_steps; ++k) {
            if (updates_ == 1 && k + 1 == shape_.stop_before_step) run.end(std::nullopt);
            if (shape_.step_ms != 0) std::this_thread::sleep_for(std::chrono::milliseconds(shape_.step_ms));
            if (!run.activity().step()) break;
          }
          run.activity().end();
          ended_.store(updates_);
          run.publish({static_cast<float>(updates_)}, "count", updates_);
          training::update_stats st;
          st.mean_q = static_cast<double>(*steps);  // something to show in the row
          const bool going = co_await run.updated(st, updates_, *steps);
          if (!going) co_return;
          const bool told = co_await run.tell_gate();
          if (!told) co_return;
        } while (shape_.same_data != 0);
      }
    });
  }
  void close() noexcept override { updates_due_.close(); }
  void chart(actor_graph& graph, training::training_run& run) override {
    graph.add_channel("updates due", sampler_->batcher_names(), {"learner"}, updates_due_);
    auto* activity = &run.activity();
    graph.add_activity("learner", [activity] { return activity->busy(); });
  }

  std::string describe_setup() const override { return fmt::format("counting steps every {}", every()); }
  std::string_view columns() const override { return "counted"; }
  std::string row(training::row_stream stream, const training::stats_snapshot&, double) override {
    const auto counted = counted_.load();
    return stream == training::row_stream::metrics ? fmt::format("{}", counted) : fmt::format("counted {}", counted);
  }
  asio::awaitable<bool> snapshot(training::checkpoint& c) override {
    final_state(c);
    co_return true;
  }
  void final_state(training::checkpoint& c) override {
    c.learner.updates = updates_;
    c.learner.env_steps = counted_.load();
  }
  std::uint64_t updates() const override { return updates_; }

  /// The step consumer: counts; every `horizon` steps per row, an update is due.
  void consume(const actors::step_batch& step) override {
    std::uint64_t n = 0;
    for (const auto& r : step.ranges) n += r.count;
    count(n);
    unsent_.fetch_add(n);
    for (const auto& r : step.ranges) {
      for (auto row = r.first; row < r.first + r.count; ++row) {
        if (step.batch.terminated()[row] != 0 || step.batch.truncated()[row] != 0) {
          run_->episode(step.batch.episode_returns()[row], step.batch.episode_lengths()[row]);
        }
      }
    }
  }
  /// The gate policy: holds every group from the step an update of several
  /// steps falls due until it ends, and for ever once a same_data learner
  /// began; else never.
  bool may_step(std::uint32_t, std::uint64_t, std::size_t) override {
    if (shape_.same_data != 0 && run_->activity().begun() > 0) return false;
    return !(shape_.update_steps > 1 && counted_.load() / every() > ended_.load());
  }

  // Distributed: a sampler rank sends the steps it counted since it last
  // sent; the learner counts them as its own.
  training::distribution_part* distribution() override { return distributable_ ? this : nullptr; }
  bool take(std::vector<std::byte>& out) override {
    const auto n = unsent_.exchange(0);
    if (n == 0) return false;
    const auto at = out.size();
    out.resize(at + sizeof(n));
    std::memcpy(out.data() + at, &n, sizeof(n));
    return true;
  }
  bool accept(std::size_t, std::span<const std::byte> in, const std::string& from) override {
    if (in.size() != sizeof(std::uint64_t)) throw error(fmt::format("count: {} sent {} bytes", from, in.size()));
    std::uint64_t n = 0;
    std::memcpy(&n, in.data(), sizeof(n));
    count(n);
    return true;
  }

 private:
  std::uint64_t every() const { return horizon_ * sampler_->rows(); }
  void count(std::uint64_t n) {
    const auto before = counted_.fetch_add(n);
    if ((before + n) / every() > before / every()) (void)updates_due_.try_send(before + n);
  }

  const training::train_options& options_;
  std::uint64_t horizon_;
  count_options shape_;
  actors::sampler* sampler_;
  bool distributable_;
  std::unique_ptr<actors::policy> policy_;
  training::training_run* run_ = nullptr;
  std::atomic<std::uint64_t> counted_{0};
  std::atomic<std::uint64_t> unsent_{0};    // a sampler rank's steps not sent yet
  std::uint64_t updates_ = 0;          // the learner's
  std::atomic<std::uint64_t> ended_{0};  // updates ended, for the gate
  channel<std::uint64_t> updates_due_{64};  // steps counted when each update fell due
};

/// The descriptor of "count" (or of `name`, the same algorithm; `distributable`
/// as count_steps takes it).
inline training::algorithm_descriptor count_steps_descriptor(std::string name = "count", bool distributable = true) {
  training::algorithm_descriptor d;
  d.name = std::move(name);
  d.title = "COUNT";
  d.summary = "counts env steps and learns nothing (a test algorithm)";
  d.defaults = [] { return std::any(count_options{}); };
  d.fields = {training::sizing(training::field<count_options>(
                  "horizon", "env steps per row between updates", [](count_options& o) -> std::uint64_t& { return o.horizon; })),
              training::field<count_options>("update-steps", "steps per update",
                                             [](count_options& o) -> std::uint64_t& { return o.update_steps; }),
              training::field<count_options>("step-ms", "milliseconds per update step",
                                             [](count_options& o) -> std::uint64_t& { return o.step_ms; }),
              training::field<count_options>("same-data", "1: update for ever on the first data",
                                             [](count_options& o) -> std::uint64_t& { return o.same_data; }),
              training::field<count_options>("fail-update", "the learner throws at this update (0: never)",
                                             [](count_options& o) -> std::uint64_t& { return o.fail_update; }),
              training::field<count_options>("stop-before-step", "a stop before this step of the first update (0: none)",
                                             [](count_options& o) -> std::uint64_t& { return o.stop_before_step; })};
  d.check = [](const training::train_options& o) {
    const auto h = training::options_of<count_options>(o).horizon;
    if (h == 0) training::detail::out_of_range("--horizon", h, "must be at least 1");
  };
  // Its one allocation that grows with a setting: a counter per step of a horizon.
  d.memory = [](actors::memory_estimate& e, const training::train_options& o, const actors::env_shape&) {
    e.add("count buffer", 8.0 * static_cast<double>(training::options_of<count_options>(o).horizon));
  };
  d.make = [distributable](const training::train_options& o, actors::sampler& s) -> std::unique_ptr<training::algorithm> {
    return std::make_unique<count_steps>(o, s, distributable);
  };
  return d;
}

/// A run of "count": 8 cartpole envs in the pool topology (batch 4, two
/// sampling threads), an update every 64 steps per row, `total_steps` long,
/// with no progress lines and no stop when solved.
inline training::train_options count_run(std::uint64_t total_steps, executor_mode mode = executor_mode::single) {
  training::register_algorithm(count_steps_descriptor());  // the one registration line
  training::train_options o;
  o.algo = "count";
  o.sampler.env = "cartpole";
  o.sampler.num_envs = 8;
  o.sampler.topo = actors::topology::pool;
  o.sampler.batch_size = 4;
  o.sampler.threads = 2;
  o.sampler.executor = mode;
  training::options_of<count_options>(o).horizon = 64;
  o.total_steps = total_steps;
  o.stop_when_solved = false;
  o.progress_seconds = 0;
  return o;
}

}  // namespace coral::test
