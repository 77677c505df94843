#include "coral/cli.hpp"

// `coral train`, and `coral bench` with the MLP policy, through the CLI in-process
// (built where coral has libtorch).

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "run_cli.hpp"

#include "coral/core/error.hpp"
#include "coral/learners/errors.hpp"
#include "coral/training/errors.hpp"
#include "../support/count_steps.hpp"
#include "../support/scratch_dir.hpp"
#include "../support/video_probe.hpp"
#include "coral/errors.hpp"
#include "coral/learners/train.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "child_process.hpp"

namespace fs = std::filesystem;
using coral::test::last_line;
using coral::test::fresh_path;
namespace lm = coral::learners::errors;
namespace te = coral::training::errors;

namespace {

using coral::test::run_cli;

/// The lines of `file` from the first algorithm setting on (after `backend`,
/// the last of the settings every run has).
std::vector<std::string> algorithm_lines(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  bool after_common = false;
  for (std::string line; std::getline(in, line);) {
    if (after_common) lines.push_back(line);
    if (line.starts_with("backend = ")) after_common = true;
  }
  return lines;
}

}  // namespace

TEST_CASE("each built-in algorithm gets the same defaults from coral train and from learners::train",
          "[apps][train_command][descriptor]") {
  const auto dir = fresh_path("train-command-defaults");
  for (const std::string algo : {"ppo", "dqn", "r2d2"}) {
    CAPTURE(algo);
    std::string out, err;
    const auto by_command = dir / (algo + "-command");
    REQUIRE(run_cli({"train", "--algo", algo, "--total-steps", "2000", "--progress-seconds", "0", "--run-dir",
                     by_command.string()},
                    out, err) == 0);
    coral::training::train_options o;
    o.algo = algo;
    o.total_steps = 2000;
    o.progress_seconds = 0;
    const auto in_process = dir / (algo + "-in-process");
    o.run_dir = in_process.string();
    std::ostringstream progress;
    (void)coral::learners::train(o, progress);
    const auto lines = algorithm_lines(by_command / "config.toml");
    CHECK(lines.size() == coral::training::find_algorithm(algo)->fields.size());
    CHECK(lines == algorithm_lines(in_process / "config.toml"));
    // A run's config.toml runs it again with the same settings.
    const auto again = dir / (algo + "-again");
    REQUIRE(run_cli({"--config", (by_command / "config.toml").string(), "train", "--progress-seconds", "0", "--run-dir",
                     again.string()},
                    out, err) == 0);
    CHECK(lines == algorithm_lines(again / "config.toml"));
  }
  // R2D2's own defaults, not DQN's.
  const auto r2d2 = algorithm_lines(dir / "r2d2-command" / "config.toml");
  for (const char* line : {"replay-capacity = 20000", "replay-batch = 32", "learning-rate = 0.001", "gamma = 0.997"}) {
    CHECK(std::find(r2d2.begin(), r2d2.end(), line) != r2d2.end());
  }
}

TEST_CASE("a test-only algorithm registered from the test file gets flags, config keys, checks, a memory estimate "
          "and checkpoints with resume",
          "[apps][train_command][descriptor]") {
  coral::training::register_algorithm(coral::test::count_steps_descriptor());
  // Later tests' help and errors list the built-in algorithms only.
  struct unregister {
    ~unregister() { coral::training::unregister_algorithm("count"); }
  } at_end;
  const auto dir = fresh_path("train-command-count");
  std::string out, err;
  const std::vector<std::string> common{"train", "--algo", "count", "--executor", "single", "--progress-seconds", "0"};
  auto with = [&](std::vector<std::string> more) {
    auto args = common;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  // Its flag, and the refusal of another algorithm's.
  REQUIRE(run_cli(with({"--horizon", "32", "--total-steps", "2048", "--run-dir", (dir / "flag").string(),
                        "--checkpoint-dir", (dir / "ckpt").string()}),
                  out, err) == 0);
  CHECK(algorithm_lines(dir / "flag" / "config.toml") ==
        std::vector<std::string>{"horizon = 32", "update-steps = 1", "step-ms = 0", "same-data = 0", "fail-update = 0",
                                 "stop-before-step = 0"});
  CHECK(run_cli(with({"--epochs", "2"}), out, err) == 1);
  CHECK(err == "error: --epochs: PPO only; --algo count does not take it\n");
  // Its check and its memory estimate, by name.
  CHECK(run_cli(with({"--horizon", "0"}), out, err) == 1);
  CHECK(err.starts_with("error: --horizon: 0 is invalid"));
  CHECK(run_cli(with({"--horizon", "1152921504606846976"}), out, err) == 1);
  CHECK(err.starts_with("error: --horizon: 1152921504606846976 needs "));
  // Its config key.
  const auto file = dir / "count.toml";
  std::ofstream(file) << "[train]\nalgo = \"count\"\nhorizon = 16\ntotal-steps = 1024\nno-run-dir = true\n";
  CHECK(run_cli({"--config", file.string(), "train", "--executor", "single", "--progress-seconds", "0"}, out, err) == 0);
  CHECK(last_line(out).find(R"("algo":"count")") != std::string::npos);
  // Its checkpoint, resumed.
  REQUIRE(run_cli(with({"--horizon", "32", "--total-steps", "4096", "--no-run-dir", "--checkpoint-dir",
                        (dir / "ckpt").string(), "--resume"}),
                  out, err) == 0);
  CHECK(last_line(out).find(R"("resumed_from":")") != std::string::npos);
  CHECK(last_line(out).find(R"("env_steps":4096)") != std::string::npos);
}

TEST_CASE("coral train writes a TensorBoard event file in its run dir unless --no-tensorboard or its config key",
          "[apps][train_command][tensorboard]") {
  coral::training::register_algorithm(coral::test::count_steps_descriptor());
  struct unregister {
    ~unregister() { coral::training::unregister_algorithm("count"); }
  } at_end;
  const auto dir = fresh_path("train-command-tensorboard");
  auto run = [&](const std::string& name, std::vector<std::string> more) {
    std::vector<std::string> args{"train", "--algo", "count", "--executor", "single", "--progress-seconds", "0",
                                  "--total-steps", "1024", "--run-dir", (dir / name).string()};
    args.insert(args.end(), more.begin(), more.end());
    std::string out, err;
    REQUIRE(run_cli(args, out, err) == 0);
    return dir / name;
  };
  auto event_files = [](const fs::path& run_dir) {
    std::size_t n = 0;
    for (const auto& entry : fs::directory_iterator(run_dir)) {
      n += entry.path().filename().string().starts_with("events.out.tfevents.") ? 1 : 0;
    }
    return n;
  };
  CHECK(event_files(run("default", {})) == 1);
  CHECK(event_files(run("flag", {"--no-tensorboard"})) == 0);
  const auto file = dir / "off.toml";
  fs::create_directories(dir);
  std::ofstream(file) << "[train]\nno-tensorboard = true\n";
  CHECK(event_files(run("config", {"--config", file.string()})) == 0);
  CHECK(fs::exists(dir / "config" / "metrics.csv"));
  fs::remove_all(dir);
}

TEST_CASE("coral train rejects an unknown --algo and ends a run with one JSON line", "[apps][train_command]") {
  std::string out, err;
  CHECK(run_cli({"train", "--algo", "a2c"}, out, err) == 1);
  CHECK(err == "error: " + fmt::format(fmt::runtime(coral::errors::bad_value), "--algo", "a2c", "ppo, dqn, r2d2") + "\n");

  CHECK(run_cli({"train", "--executor", "single", "--total-steps", "1024", "--no-run-dir", "--progress-seconds", "0"},
                out, err) == 0);
  const auto json = last_line(out);
  CHECK(json.starts_with(R"({"solved":false,)"));
  for (const char* key : {R"("env_steps":)", R"("wall_seconds":)", R"("mean_return":)"}) {
    CHECK(json.find(key) != std::string::npos);
  }
  CHECK(run_cli({"train", "--horizon", "0"}, out, err) == 1);
  CHECK(err.find("--horizon") != std::string::npos);
}

TEST_CASE("coral train takes its flags from a TOML file, and flags override it", "[apps][train_command]") {
  const auto dir = fresh_path("train-command-config");
  fs::create_directories(dir);
  const auto file = dir / "train.toml";
  std::ofstream(file) << "[train]\n"
                         "env = \"bandit\"\n"
                         "seed = 5\n"
                         "total-steps = 1024\n"
                         "hidden = [16, 16]\n"
                         "executor = \"single\"\n"
                         "progress-seconds = 0\n"
                         "no-run-dir = true\n";
  std::string out, err;
  REQUIRE(run_cli({"--config", file.string(), "train", "--seed", "6", "--keep-going"}, out, err) == 0);
  const auto json = last_line(out);
  CHECK(json.find(R"("env":"bandit")") != std::string::npos);
  CHECK(json.find(R"("seed":6,)") != std::string::npos);
  CHECK(json.find(R"("executor":"single")") != std::string::npos);
  CHECK(out.find(" 693 parameters") != std::string::npos);  // actor 32+272+68, critic 32+272+17
}

TEST_CASE("coral bench samples with the untrained MLP policy and names --policy on a bad value",
          "[apps][bench_command]") {
  std::string out, err;
  const int rc = run_cli({"bench", "--policy", "mlp", "--env", "cartpole", "--num-envs", "8", "--envs-per-group", "2",
                          "--steps", "4000", "--baseline-steps", "4000", "--json"},
                         out, err);
  INFO(err);
  REQUIRE(rc == 0);
  const auto json = last_line(out);
  CHECK(json.find(R"("policy":"mlp")") != std::string::npos);
  CHECK(json.find(R"("steps_per_second":)") != std::string::npos);
  CHECK(json.find(R"("env_steps":4000)") != std::string::npos);
  // Auto's spin as resolved (cartpole in groups of 2: none, or 50 if the probe ran slow).
  CHECK((json.find(R"("spin_us":0,)") != std::string::npos || json.find(R"("spin_us":50,)") != std::string::npos));

  CHECK(run_cli({"bench", "--policy", "nn"}, out, err) == 1);
  CHECK(err == "error: --policy: invalid value 'nn' (allowed: random, constant, mlp)\n");
}

TEST_CASE("coral bench --baseline-threads runs the baseline as loops side by side, one policy each",
          "[apps][bench_command]") {
  for (const std::string policy : {"random", "mlp"}) {
    CAPTURE(policy);
    std::string out, err;
    const int rc = run_cli({"bench", "--policy", policy, "--env", "cartpole", "--num-envs", "8", "--threads", "2",
                            "--steps", "4000", "--baseline-threads", "4", "--json"},
                           out, err);
    INFO(err);
    REQUIRE(rc == 0);
    CHECK(out.find("baseline: 4 plain for-loops side by side, 2 of the same 8 envs each on a thread of its own: ") !=
          std::string::npos);
    CHECK(out.find("speedup over the plain loops: ") != std::string::npos);
    const auto json = last_line(out);
    CHECK(json.find(R"("baseline_threads":4,)") != std::string::npos);
    CHECK(json.find(R"("baseline_steps_per_second":null)") == std::string::npos);
  }
}

TEST_CASE("coral train runs each algorithm at its defaults and with the flags every algorithm takes, and refuses "
          "another algorithm's setting before anything starts",
          "[apps][train_command]") {
  const std::vector<std::string> quick = {"--total-steps", "2000", "--executor", "single", "--no-run-dir",
                                          "--progress-seconds", "0"};
  // Set in the running algorithm's config only: never taken for a setting of another.
  const std::vector<std::string> shared = {"--learning-rate", "1e-3", "--gamma", "0.98", "--max-grad-norm", "1",
                                           "--adam-epsilon", "1e-4"};
  const std::vector<std::vector<std::string>> algos = {
      {"--algo", "ppo"}, {"--algo", "dqn"}, {"--algo", "r2d2", "--env", "repeat_previous"}};
  for (const auto& algo : algos) {
    for (const bool with_shared : {false, true}) {
      std::vector<std::string> args = {"train"};
      args.insert(args.end(), algo.begin(), algo.end());
      args.insert(args.end(), quick.begin(), quick.end());
      if (with_shared) args.insert(args.end(), shared.begin(), shared.end());
      std::string out, err;
      CAPTURE(args, err);
      REQUIRE(run_cli(args, out, err) == 0);
      CHECK(last_line(out).find(fmt::format(R"("algo":"{}")", algo[1])) != std::string::npos);
    }
  }
  std::string out, err;
  CHECK(run_cli({"train", "--algo", "dqn", "--gae-lambda", "0.5", "--no-run-dir"}, out, err) == 1);
  CHECK(err == "error: " + fmt::format(fmt::runtime(te::setting_of_other_algo), "--gae-lambda", "PPO", "dqn") + "\n");
  CHECK(out.empty());
}

TEST_CASE("coral train refuses another algorithm's flag given at its default value, typed or from a config file",
          "[apps][train_command]") {
  // Each flag at the default its algorithm has (so the options alone look
  // untouched), under an algorithm that does not read it.
  struct refusal {
    std::vector<std::string> args;
    std::string flag, read_by, algo;
  };
  const std::vector<refusal> refusals = {
      {{"--algo", "ppo", "--replay-capacity", "100000"}, "--replay-capacity", "DQN and R2D2", "ppo"},
      {{"--replay-batch", "128"}, "--replay-batch", "DQN and R2D2", "ppo"},  // --algo ppo by default
      {{"--algo", "dqn", "--gae-lambda", "0.95"}, "--gae-lambda", "PPO", "dqn"},
      {{"--algo", "dqn", "--lstm", "0"}, "--lstm", "PPO and R2D2", "dqn"},
      {{"--algo", "dqn", "--frames", "1"}, "--frames", "PPO", "dqn"},
      {{"--algo", "dqn", "--seq-len", "80"}, "--seq-len", "R2D2", "dqn"},
      {{"--algo", "r2d2", "--lstm", "16", "--horizon", "128"}, "--horizon", "PPO", "r2d2"},
      {{"--algo", "r2d2", "--lstm", "16", "--clip", "0.2"}, "--clip", "PPO", "r2d2"},
  };
  for (const auto& r : refusals) {
    std::vector<std::string> args = {"train", "--no-run-dir"};
    args.insert(args.end(), r.args.begin(), r.args.end());
    std::string out, err;
    CAPTURE(args);
    CHECK(run_cli(args, out, err) == 1);
    CHECK(err == "error: " + fmt::format(fmt::runtime(te::setting_of_other_algo), r.flag, r.read_by, r.algo) + "\n");
    CHECK(out.empty());
  }
  // From a config file, which sets flags as typed ones do.
  const auto dir = fresh_path("train-command-default-of-other-algo");
  fs::create_directories(dir);
  const auto file = dir / "train.toml";
  std::ofstream(file) << "[train]\nalgo = \"ppo\"\nreplay-capacity = 100000\nno-run-dir = true\n";
  std::string out, err;
  CHECK(run_cli({"--config", file.string(), "train"}, out, err) == 1);
  CHECK(err == "error: " + fmt::format(fmt::runtime(te::setting_of_other_algo), "--replay-capacity", "DQN and R2D2",
                                       "ppo") + "\n");
  // The same flags under the algorithms that read them are taken.
  CHECK(run_cli({"train", "--algo", "dqn", "--replay-capacity", "100000", "--replay-batch", "128", "--total-steps",
                 "2000", "--executor", "single", "--no-run-dir", "--progress-seconds", "0"},
                out, err) == 0);
  CHECK(run_cli({"train", "--algo", "ppo", "--gae-lambda", "0.95", "--clip", "0.2", "--frames", "1", "--lstm", "0",
                 "--total-steps", "1024", "--executor", "single", "--no-run-dir", "--progress-seconds", "0"},
                out, err) == 0);
  fs::remove_all(dir);
}

TEST_CASE("coral train's warnings go to stderr: stdout is progress and the JSON line", "[apps][train_command]") {
  const auto dir = fs::temp_directory_path() / "coral-train-warnings";
  fs::remove_all(dir);
  const auto ckpt = (dir / "ckpt").string();
  std::string out, err;
  REQUIRE(run_cli({"train", "--total-steps", "2048", "--keep-going", "--checkpoint-dir", ckpt, "--no-run-dir",
                   "--progress-seconds", "0"},
                  out, err) == 0);
  const auto directory = dir / "ckpt" / "checkpoint-999999999999.ckpt";
  fs::create_directories(directory);
  REQUIRE(run_cli({"train", "--total-steps", "4096", "--keep-going", "--checkpoint-dir", ckpt, "--resume",
                   "--no-run-dir", "--progress-seconds", "0"},
                  out, err) == 0);
  const auto warning = fmt::format(fmt::runtime(coral::training::errors::checkpoint_skipped),
                                   fmt::format(fmt::runtime(coral::training::errors::checkpoint_not_a_file),
                                               directory.string()));
  CHECK(err == warning + "\n");
  CHECK(out.find("; skipped") == std::string::npos);
  CHECK(out.find("resumed from ") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("coral train --video-every records clips of the policy into <run dir>/videos, from the flag or its config "
          "key",
          "[apps][train_command][video]") {
  const auto dir = fresh_path("train-command-clips");
  fs::create_directories(dir);
  std::ofstream(dir / "clips.toml") << "[train]\nvideo-every = 2\n";
  const std::vector<std::string> run{CORAL_BINARY, "train", "--total-steps", "4096", "--executor", "single",
                                     "--progress-seconds", "0"};
  auto with = [&](std::vector<std::string> more) {
    coral::test::invocation i{.argv = run};
    i.argv.insert(i.argv.end(), more.begin(), more.end());
    return i;
  };
  // 8 updates: clips asked for at updates 2, 4, 6 and 8.
  const auto ends = coral::test::run_children(
      {with({"--run-dir", (dir / "flag").string(), "--video-every", "2"}),
       with({"--run-dir", (dir / "config").string(), "--config", (dir / "clips.toml").string()})},
      2, std::chrono::seconds(120));
  for (const auto& [end, name] : {std::pair{ends[0], "flag"}, std::pair{ends[1], "config"}}) {
    INFO(name << ": " << end.out << end.err);
    REQUIRE(end.exit_code == 0);
    CHECK(end.err.empty());
    CHECK_THAT(last_line(end.out), Catch::Contains(R"("updates":8,)"));
    // The first request finds the recorder idle, and a run that ends writes
    // the clip it asked for: update 2's clip at least; later ones may have
    // been skipped while one was written.
    std::vector<std::pair<fs::path, int>> clips;
    std::istringstream lines(end.out);
    for (std::string line; std::getline(lines, line);) {
      if (!line.starts_with("clip: ")) continue;
      const auto open = line.rfind(" (");
      clips.emplace_back(line.substr(6, open - 6), std::stoi(line.substr(open + 2)));
      // cartpole: the return is the length
      CHECK(line == fmt::format(fmt::runtime(te::clip_written), clips.back().first.string(), clips.back().second,
                                clips.back().second));
    }
    REQUIRE_FALSE(clips.empty());
    CHECK(clips.front().first == dir / name / "videos" / "update-000002.mp4");
    for (const auto& [file, frames] : clips) {
      const auto facts = coral::test::probe_video(file);
      REQUIRE(facts.read);
      CHECK(facts.frames == frames);
      CHECK(facts.width == 600);
    }
    CHECK(static_cast<std::size_t>(std::distance(fs::directory_iterator(dir / name / "videos"),
                                                 fs::directory_iterator())) == clips.size());
  }
  fs::remove_all(dir);
}

TEST_CASE("coral train --video-every is refused before the run without a run dir, ffmpeg or an env that renders, or "
          "above its bound",
          "[apps][train_command][video][errors]") {
  const auto dir = fresh_path("train-command-clips-refused");
  const auto no_ffmpeg = coral::test::fresh_dir("train-command-no-ffmpeg");
  const std::vector<std::string> run{CORAL_BINARY, "train", "--total-steps", "4096", "--progress-seconds", "0"};
  auto with = [&](std::vector<std::string> more) {
    coral::test::invocation i{.argv = run};
    i.argv.insert(i.argv.end(), more.begin(), more.end());
    return i;
  };
  auto without_ffmpeg = with({"--run-dir", (dir / "a").string(), "--video-every", "2"});
  without_ffmpeg.extra_env = {"PATH=" + no_ffmpeg.string()};
  const auto ends = coral::test::run_children(
      {with({"--no-run-dir", "--video-every", "2"}), without_ffmpeg,
       with({"--env", "bandit", "--run-dir", (dir / "b").string(), "--video-every", "2"}),
       with({"--run-dir", (dir / "c").string(), "--video-every", "1000001"})},
      2, std::chrono::seconds(60));
  const std::vector<std::string> expected{
      std::string(te::video_every_needs_run_dir), std::string(te::video_every_no_ffmpeg),
      fmt::format(fmt::runtime(te::video_every_no_render), "bandit"),
      "--video-every: " + fmt::format(fmt::runtime(coral::cli::errors::number_too_large), "1000001", 1000000)};
  REQUIRE(ends.size() == expected.size());
  for (std::size_t i = 0; i < ends.size(); ++i) {
    INFO("case " << i << ": " << ends[i].out << ends[i].err);
    CHECK(ends[i].exit_code == 1);
    CHECK(ends[i].out.empty());
    CHECK(ends[i].err == "error: " + expected[i] + "\n");
  }
  CHECK_FALSE(fs::exists(dir));  // refused before any run dir was made
}
