#include "coral/training/live_view.hpp"

#include <atomic>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/channels/channel.hpp"
#include "../support/prometheus_text.hpp"

namespace coral::training {
namespace {

/// A run of three actors: a producer that sends on `queue` to a consumer,
/// and a daemon with no probe.
struct fake_run {
  channel<int> queue{4};
  std::atomic<bool> producer_busy{false};
  std::atomic<std::int64_t> consumer_waited_ns{0};
  std::atomic<bool> consumer_done{false};
  live_counters counters;
  actor_graph graph;

  fake_run() {
    graph.add_channel("queue \"q\"", {"producer"}, {"consumer"}, queue);
    graph.add_activity("producer", [this] { return producer_busy.load(); });
    graph.add_busy_time("consumer", [this] { return consumer_waited_ns.load(); });
    graph.add_figure("policy_lag", "a figure", [] { return 1.5; });
  }
  live_source source() {
    live_source s;
    s.title = "a fake run";
    s.actors = [] { return std::vector<std::string>{"producer", "consumer", "watchdog"}; };
    s.finished = [this](const std::string& name) { return name == "consumer" && consumer_done.load(); };
    s.counters = [this] { return counters; };
    s.graph = &graph;
    return s;
  }
};

}  // namespace

TEST_CASE("the live view lists every actor with its busy fraction, each channel's depth, and the curve",
          "[training][live_view]") {
  fake_run run;
  live_view view(run.source());
  // Before the first window: the actors, no busy fraction yet.
  CHECK_THAT(view.state_json(), Catch::Matchers::Contains(R"({"name":"watchdog","running":true,"busy":null})"));

  for (int i = 0; i < 4; ++i) {
    run.producer_busy = i % 4 != 0;  // busy in 3 samples of 4
    view.sample();
  }
  REQUIRE(run.queue.try_send(1));
  REQUIRE(run.queue.try_send(2));
  run.counters = {.env_steps = 100, .updates = 2, .episodes = 3, .mean_return = 12.5};
  run.consumer_done = true;
  view.tick();
  const auto state = view.state_json();
  CHECK_THAT(state, Catch::Matchers::Contains(R"({"name":"producer","running":true,"busy":0.75})"));
  CHECK_THAT(state, Catch::Matchers::Contains(R"({"name":"consumer","running":false,"busy":1})"));
  CHECK_THAT(state, Catch::Matchers::Contains(
                        R"({"name":"queue \"q\"","senders":["producer"],"receivers":["consumer"],"depth":2,"capacity":4})"));
  CHECK_THAT(state, Catch::Matchers::Contains(R"("figures":{"policy_lag":1.5})"));
  CHECK_THAT(state, Catch::Matchers::Contains(R"("curve":[[100,12.5]])"));
  CHECK_THAT(state, Catch::Matchers::Contains(R"("env_steps":100,"updates":2,"episodes":3,"mean_return":12.5)"));

  // A window with no new episode adds no curve point.
  view.tick();
  CHECK_THAT(view.state_json(), Catch::Matchers::Contains(R"("curve":[[100,12.5]])"));
}

TEST_CASE("the live view's /metrics text is Prometheus's format: every line a comment or one sample",
          "[training][live_view]") {
  fake_run run;
  live_view view(run.source());
  run.counters = {.env_steps = 7, .updates = 1, .episodes = 1, .mean_return = -3.0};
  view.sample();
  view.tick();
  std::vector<std::string> problems;
  const auto samples = test::parse_prometheus(view.prometheus(), problems);
  CHECK(problems.empty());
  auto value_of = [&](const std::string& name, const std::string& labels) {
    for (const auto& s : samples) {
      if (s.name == name && s.labels == labels) return s.value;
    }
    FAIL("no sample " << name << "{" << labels << "}");
    return 0.0;
  };
  CHECK(value_of("coral_env_steps_total", "") == 7);
  CHECK(value_of("coral_mean_return", "") == -3.0);
  CHECK(value_of("coral_policy_lag", "") == 1.5);
  CHECK(value_of("coral_channel_capacity", R"(channel="queue \"q\"")") == 4);
  CHECK(value_of("coral_actor_running", R"(actor="watchdog")") == 1);
  CHECK(value_of("coral_actor_busy_ratio", R"(actor="producer")") == 0);
}

TEST_CASE("the live view keeps its curve within max_curve_points, over the whole run", "[training][live_view]") {
  fake_run run;
  live_view view(run.source());
  const auto points = live_view::max_curve_points + 1;
  for (std::uint64_t i = 1; i <= points; ++i) {
    run.counters = {.env_steps = i, .updates = 0, .episodes = i, .mean_return = 1.0};
    view.tick();
  }
  const auto state = view.state_json();
  CHECK_THAT(state, Catch::Matchers::Contains("[1,1]"));
  CHECK_THAT(state, Catch::Matchers::Contains(fmt::format("[{},1]", points)));
  CHECK_THAT(state, !Catch::Matchers::Contains("[2,1]"));  // every other point dropped
}

TEST_CASE("prometheus_label escapes backslashes, quotes and newlines", "[training][live_view]") {
  CHECK(prometheus_label("a\\b\"c\nd") == R"("a\\b\"c\nd")");
}

}  // namespace coral::training
