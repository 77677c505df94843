#include "coral/dashboard_flags.hpp"

#include <filesystem>
#include <mutex>
#include <sstream>
#include <regex>
#include <set>
#include <streambuf>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "child_process.hpp"
#include "coral/cli.hpp"
#include "coral/errors.hpp"
#include "coral/training/errors.hpp"
#include "coral/training/http_server.hpp"
#include "../support/http_client.hpp"
#include "../support/prometheus_text.hpp"
#include "../support/scratch_dir.hpp"
#include "../support/watchdog.hpp"

namespace {

/// An output stream's buffer that the run's threads write and the test
/// reads at the same time: no put area, every write under the lock.
class shared_text : public std::streambuf {
 public:
  std::string text() const {
    std::lock_guard lock(mutex_);
    return text_;
  }

 protected:
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) {
      std::lock_guard lock(mutex_);
      text_ += traits_type::to_char_type(c);
    }
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard lock(mutex_);
    text_.append(s, static_cast<std::size_t>(n));
    return n;
  }

 private:
  mutable std::mutex mutex_;
  std::string text_;
};

std::uint16_t printed_port(const std::string& progress) {
  static const std::regex line(R"(dashboard: http://127\.0\.0\.1:([0-9]+)/)");
  std::smatch m;
  REQUIRE(std::regex_search(progress, m, line));
  return static_cast<std::uint16_t>(std::stoi(m[1]));
}

}  // namespace

TEST_CASE("coral train --dashboard serves a PPO run's actors, channels, rates and curve while it trains",
          "[apps][dashboard]") {
  coral::test::watchdog limit("a PPO run with --dashboard", std::chrono::minutes(5));
  const auto dir = coral::test::fresh_path("dashboard-ppo");
  shared_text out_text;
  std::ostream out(&out_text);
  std::ostringstream err;
  std::string state, metrics;
  coral::cli::run_hooks hooks;
  hooks.on_metrics_row = [&](std::string_view, std::string_view) {
    const auto port = printed_port(out_text.text());
    state = coral::test::http_get(port, "/state.json").body;
    // Until the first window (a second) with finished episodes is in.
    if (state.find("\"curve\":[[") == std::string::npos) return true;
    metrics = coral::test::http_get(port, "/metrics").body;
    return false;  // stop the run, as SIGINT does
  };
  const std::vector<std::string> args{"coral", "train", "--env", "cartpole", "--algo", "ppo", "--dashboard",
                                      "--total-steps", "100000000", "--keep-going", "--run-dir", dir.string()};
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  REQUIRE(coral::cli::run(static_cast<int>(argv.size()), argv.data(), out, err, hooks) == 0);

  static const std::regex actor(R"re(\{"name":"([^"]*)","running")re");
  std::set<std::string> actors;
  for (std::sregex_iterator it(state.begin(), state.end(), actor), end; it != end; ++it) actors.insert((*it)[1]);
  for (const auto* name : {"env-group-0", "inference-batcher", "gate", "learner", "progress", "stall-watchdog"}) {
    CHECK(actors.count(name) == 1);
  }
  CHECK_THAT(state, Catch::Matchers::Contains(R"("name":"segments","senders":["inference-batcher"],"receivers":["learner"])"));
  CHECK_THAT(state, Catch::Matchers::Contains(R"("figures":{"policy_lag":)"));

  std::vector<std::string> problems;
  const auto samples = coral::test::parse_prometheus(metrics, problems);
  CHECK(problems.empty());
  std::set<std::string> names;
  for (const auto& s : samples) names.insert(s.name);
  for (const auto* name : {"coral_env_steps_total", "coral_updates_total", "coral_env_steps_per_second",
                           "coral_actor_busy_ratio", "coral_channel_depth", "coral_policy_lag"}) {
    CHECK(names.count(name) == 1);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("coral train and bench refuse a live view whose port is in use or whose address is not one, before "
          "anything starts",
          "[apps][dashboard]") {
  using coral::training::http_server;
  http_server taken(coral::training::http_server_options{}, [](std::string_view) { return coral::training::http_response{}; });
  const auto port = std::to_string(taken.port());
  const auto in_use = fmt::format(fmt::runtime(coral::training::errors::dashboard_port_in_use), taken.port(), "127.0.0.1");
  const auto dir = coral::test::fresh_path("dashboard-refusals");
  std::filesystem::create_directories(dir);
  struct refusal {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<refusal> table = {
      {{"train", "--dashboard", "--dashboard-port", port}, in_use},
      {{"bench", "--dashboard", "--dashboard-port", port}, in_use},
      {{"train", "--dashboard", "--dashboard-bind", "localhost"},
       fmt::format(fmt::runtime(coral::training::errors::dashboard_bad_bind), "localhost")},
      {{"train", "--dashboard", "--dashboard-port", "99999"},
       "--dashboard-port: " + fmt::format(fmt::runtime(coral::cli::errors::number_too_large), "99999", 65535)},
      {{"train", "--dashboard-port", "8080"},
       fmt::format(fmt::runtime(coral::cli::errors::flag_needs), "--dashboard-port", "--dashboard",
                   "it sets where the live view is served")},
  };
  std::vector<coral::test::invocation> all;
  for (const auto& r : table) {
    coral::test::invocation inv;
    inv.argv.push_back(CORAL_BINARY);
    inv.argv.insert(inv.argv.end(), r.args.begin(), r.args.end());
    inv.cwd = dir.string();
    all.push_back(std::move(inv));
  }
  const auto results = coral::test::run_children(all, 2, std::chrono::milliseconds(60'000));
  for (std::size_t i = 0; i < table.size(); ++i) {
    INFO(fmt::format("coral {}", fmt::join(table[i].args, " ")));
    CHECK_FALSE(results[i].killed);
    CHECK(results[i].exit_code == coral::cli::exit_code::rejected);
    CHECK(results[i].err == "error: " + table[i].err + "\n");
    CHECK(results[i].out.empty());
  }
  CHECK_FALSE(std::filesystem::exists(dir / "runs"));
  std::filesystem::remove_all(dir);
}
