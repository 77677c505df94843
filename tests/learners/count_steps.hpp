#pragma once
/// \file
/// "Count steps, learn nothing": a whole algorithm in one file, to show what
/// a new algorithm takes. Registering it is one line:
///
///     coral::learners::register_algorithm("count", coral::test::make_count_steps);
///
/// It acts at random, lets every group step (its gate policy holds nothing),
/// counts the env steps the batcher hands it, and "updates" once per
/// `horizon` steps of every row: its learner publishes weights that hold the
/// update number and reports the update to the run. Its checkpoint state is
/// the counters.

#include <atomic>
#include <cstring>
#include <span>
#include <vector>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "coral/actors/gate.hpp"
#include "coral/actors/policy.hpp"
#include "coral/learners/algorithm.hpp"
#include "coral/learners/training_run.hpp"

namespace coral::test {

class count_steps final : public learners::algorithm, actors::step_consumer, actors::gate_policy {
 public:
  /// `distributable`: whether it runs distributed (the hooks at the end).
  count_steps(const learners::train_options& o, actors::sampler& s, bool distributable = true)
      : options_(o),
        sampler_(&s),
        distributable_(distributable),
        policy_(actors::make_builtin_policy("random", s.action_space(), s.rows(), 1)) {}

  std::string signature() const override { return "count"; }
  std::string restore(const learners::checkpoint& c) override {
    updates_ = c.learner.updates;
    counted_ = c.learner.env_steps;
    return fmt::format("{} steps counted", counted_.load());
  }

  void start(learners::training_run& run) override {
    run_ = &run;
    run.publish_initial({static_cast<float>(updates_)});
  }
  actors::policy& policy() override { return *policy_; }
  actors::step_consumer& consumer() override { return *this; }
  actors::gate_policy& gate_policy() override { return *this; }

  void spawn(runtime& rt, learners::training_run& run) override {
    rt.spawn("learner", rt.pool("learner", 1), [this, &run]() -> asio::awaitable<void> {
      for (;;) {
        auto steps = co_await updates_due_.async_receive();
        if (!steps) co_return;
        ++updates_;
        run.publish({static_cast<float>(updates_)}, "count", updates_);
        learners::update_stats st;
        st.mean_q = static_cast<double>(*steps);  // something to show in the row
        const bool going = co_await run.updated(st, updates_, *steps);
        if (!going) co_return;
        const bool told = co_await run.tell_gate();
        if (!told) co_return;
      }
    });
  }
  void close() noexcept override { updates_due_.close(); }

  std::string describe_setup() const override { return fmt::format("counting steps every {}", every()); }
  std::string_view columns() const override { return "counted"; }
  std::string row(learners::row_stream stream, const learners::stats_snapshot&, double) override {
    const auto counted = counted_.load();
    return stream == learners::row_stream::metrics ? fmt::format("{}", counted) : fmt::format("counted {}", counted);
  }
  asio::awaitable<bool> snapshot(learners::checkpoint& c) override {
    final_state(c);
    co_return true;
  }
  void final_state(learners::checkpoint& c) override {
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
  /// The gate policy: never holds a group.
  bool may_step(std::uint32_t, std::uint64_t, std::size_t) override { return true; }

  // Distributed: a sampler rank sends the steps it counted since it last
  // sent; the learner counts them as its own.
  bool distributed() const override { return distributable_; }
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
  std::uint64_t every() const { return options_.horizon * sampler_->rows(); }
  void count(std::uint64_t n) {
    const auto before = counted_.fetch_add(n);
    if ((before + n) / every() > before / every()) (void)updates_due_.try_send(before + n);
  }

  const learners::train_options& options_;
  actors::sampler* sampler_;
  bool distributable_;
  std::unique_ptr<actors::policy> policy_;
  learners::training_run* run_ = nullptr;
  std::atomic<std::uint64_t> counted_{0};
  std::atomic<std::uint64_t> unsent_{0};    // a sampler rank's steps not sent yet
  std::uint64_t updates_ = 0;          // the learner's
  channel<std::uint64_t> updates_due_{64};  // steps counted when each update fell due
};

/// The factory register_algorithm() takes.
inline std::unique_ptr<learners::algorithm> make_count_steps(const learners::train_options& o, actors::sampler& s) {
  return std::make_unique<count_steps>(o, s);
}

}  // namespace coral::test
