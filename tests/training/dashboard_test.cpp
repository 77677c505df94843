#include "coral/training/dashboard.hpp"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/count_steps.hpp"
#include "../support/http_client.hpp"
#include "../support/prometheus_text.hpp"
#include "../support/refusal.hpp"
#include "../support/watchdog.hpp"
#include "coral/training/errors.hpp"
#include "coral/training/training_run.hpp"

namespace coral::training {
namespace {

/// A run of the test algorithm "count" with the live view on, long enough
/// to be stopped by its metrics hook.
train_options dashboard_run(executor_mode mode) {
  auto o = test::count_run(2'000'000'000, mode);  // the hook stops it
  options_of<test::count_options>(o).horizon = 16;
  o.dashboard.on = true;
  return o;
}

/// The "name" values of the objects in state.json's "actors" or "channels" array.
std::vector<std::string> names_in(const std::string& state, const std::string& key) {
  const auto from = state.find("\"" + key + "\":[");
  REQUIRE(from != std::string::npos);
  // The arrays come in this order: actors, channels, then the figures.
  const auto end = state.find(key == "actors" ? "],\"channels\"" : "],\"figures\"", from);
  const auto part = state.substr(from, end - from);
  static const std::regex name(R"re(\{"name":"([^"]*)")re");
  std::vector<std::string> out;
  for (std::sregex_iterator it(part.begin(), part.end(), name), last; it != last; ++it) out.push_back((*it)[1]);
  return out;
}

/// The senders and receivers every channel of state.json names.
std::set<std::string> channel_ends(const std::string& state) {
  std::set<std::string> out;
  const auto from = state.find("\"channels\":[");
  const auto part = state.substr(from, state.find("],\"figures\"", from) - from);
  static const std::regex list(R"re("(?:senders|receivers)":\[([^\]]*)\])re");
  static const std::regex quoted(R"re("([^"]*)")re");
  for (std::sregex_iterator it(part.begin(), part.end(), list), last; it != last; ++it) {
    const std::string names = (*it)[1];
    for (std::sregex_iterator q(names.begin(), names.end(), quoted); q != last; ++q) out.insert((*q)[1]);
  }
  return out;
}

/// What the test saw while the run went on.
struct seen_live {
  std::string state;
  std::string metrics;
  std::string page;
  std::size_t groups = 0;
};

/// Runs `o` until `done(state.json)` says so (asked at each metrics row),
/// and returns the last state.json, /metrics and the page then.
seen_live watch_run(train_options o, const std::function<bool(const std::string&, std::uint16_t)>& done) {
  std::ostringstream progress;
  std::ostringstream warnings;
  seen_live seen;
  training_run* run_seen = nullptr;
  o.on_metrics_row = [&](std::string_view, std::string_view) {
    const auto port = run_seen->dashboard_port();
    seen.state = test::http_get(port, "/state.json").body;
    if (!done(seen.state, port)) return true;
    seen.metrics = test::http_get(port, "/metrics").body;
    seen.page = test::http_get(port, "/").body;
    seen.groups = run_seen->sampler().wires().groups;
    return false;  // stop the run, as a signal does
  };
  training_run run(o, progress, warnings);
  run_seen = &run;
  const auto result = run.run();
  CHECK(result.interrupted);
  CHECK_THAT(progress.str(), Catch::Matchers::Contains("dashboard: http://127.0.0.1:"));
  return seen;
}

void check_every_actor_listed(const seen_live& seen) {
  const auto actors = names_in(seen.state, "actors");
  const std::set<std::string> listed(actors.begin(), actors.end());
  for (const auto* name : {"gate", "inference-batcher", "learner", "stall-watchdog"}) {
    CHECK(listed.count(name) == 1);
  }
  for (std::size_t g = 0; g < seen.groups; ++g) CHECK(listed.count(fmt::format("env-group-{}", g)) == 1);
  // Every end of every channel is an actor of the run.
  for (const auto& end : channel_ends(seen.state)) CHECK(listed.count(end) == 1);
  CHECK(names_in(seen.state, "channels").size() >= seen.groups + 2);  // each group's actions, the gate's inbox, ...

  std::vector<std::string> problems;
  const auto samples = test::parse_prometheus(seen.metrics, problems);
  CHECK(problems.empty());
  std::set<std::string> running;
  for (const auto& s : samples) {
    if (s.name == "coral_actor_running") running.insert(s.labels);
  }
  for (const auto& a : actors) CHECK(running.count(fmt::format("actor=\"{}\"", a)) == 1);
  CHECK_THAT(seen.page, Catch::Matchers::Contains("<title>coral: live view</title>"));
}

}  // namespace

TEST_CASE("a run with the live view serves /state.json and /metrics listing every actor and channel of the run",
          "[training][dashboard]") {
  test::watchdog limit("a run with the live view", std::chrono::minutes(5));
  for (const auto mode : {executor_mode::threads, executor_mode::single}) {
    INFO(to_string(mode));
    const auto seen = watch_run(dashboard_run(mode), [](const std::string& state, std::uint16_t) {
      return state.find("\"name\":\"learner\"") != std::string::npos;
    });
    check_every_actor_listed(seen);
  }
}

TEST_CASE("a run that ends with clients connected to its live view returns, and their connections end",
          "[training][dashboard]") {
  test::watchdog limit("a run ending with clients connected", std::chrono::minutes(5));
  auto o = dashboard_run(executor_mode::threads);
  std::optional<test::tcp_client> silent;       // connected, sends nothing
  std::optional<test::tcp_client> unfinished;   // half a request
  std::optional<test::tcp_client> not_reading;  // asked for the page, reads nothing yet
  training_run* run_seen = nullptr;
  std::uint16_t port = 0;
  o.on_metrics_row = [&](std::string_view, std::string_view) {
    port = run_seen->dashboard_port();
    silent.emplace(port);
    unfinished.emplace(port);
    unfinished->send("GET /state.json HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    not_reading.emplace(port);
    not_reading->send("GET / HTTP/1.1\r\n\r\n");
    return false;  // stop the run with all three connected
  };
  std::ostringstream progress;
  std::ostringstream warnings;
  training_run run(o, progress, warnings);
  run_seen = &run;
  CHECK(run.run().interrupted);  // returned: the stop waited on none of them
  REQUIRE(silent.has_value());
  CHECK(silent->receive_all().empty());
  CHECK(unfinished->receive_all().empty());
  (void)not_reading->receive_all();  // answered or cut off, either way it ends
  CHECK_THROWS(test::tcp_client(port));  // and nothing listens any more
}

TEST_CASE("a run whose live view cannot take its port is refused before it starts, naming the port",
          "[training][dashboard]") {
  http_server taken(http_server_options{}, [](std::string_view) { return http_response{}; });
  auto o = dashboard_run(executor_mode::single);
  o.dashboard.port = taken.port();
  const auto expected = fmt::format(fmt::runtime(errors::dashboard_port_in_use), taken.port(), "127.0.0.1");
  CHECK(test::refusal_of([&] { training_run::validate(o); }) == expected);
  std::ostringstream progress;
  CHECK(test::refusal_of([&] { training_run(o, progress).run(); }) == expected);
  CHECK(progress.str().empty());  // nothing ran

  o.dashboard.port = 0;
  o.dashboard.bind = "not-an-address";
  CHECK(test::refusal_of([&] { training_run::validate(o); }) ==
        fmt::format(fmt::runtime(errors::dashboard_bad_bind), "not-an-address"));
}

TEST_CASE("headless Chromium shows every actor of a live run and a learning curve with points",
          "[training][dashboard][browser]") {
  if (std::system("command -v chromium > /dev/null 2>&1") != 0) {
    WARN("SKIPPED: chromium is not installed here (scripts/deps.sh installs it for the tests)");
    return;
  }
  test::watchdog limit("the page in headless Chromium", std::chrono::minutes(5));
  std::string dom;
  const auto seen = watch_run(dashboard_run(executor_mode::threads), [&](const std::string& state, std::uint16_t port) {
    if (state.find("\"curve\":[[") == std::string::npos) return false;  // the first window with episodes is not in yet
    // The page polls /state.json at once and every second: 3 s of the
    // browser's virtual time draw it a few times.
    const auto command = fmt::format(
        "chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --virtual-time-budget=3000 "
        "--dump-dom http://127.0.0.1:{}/ 2>/dev/null",
        port);
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[65536];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) dom.append(buffer, n);
    CHECK(::pclose(pipe) == 0);
    return true;
  });
  for (const auto& actor : names_in(seen.state, "actors")) {
    INFO(actor);
    CHECK_THAT(dom, Catch::Matchers::Contains(fmt::format("data-actor=\"{}\"", actor)));
  }
  static const std::regex points(R"re(data-points="([0-9]+)")re");
  std::smatch m;
  REQUIRE(std::regex_search(dom, m, points));
  CHECK(std::stoi(m[1]) > 0);
}

}  // namespace coral::training
