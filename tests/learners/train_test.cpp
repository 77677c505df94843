#include "coral/learners/train.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/actors/messages.hpp"
#include "coral/core/error.hpp"
#include "coral/learners/checkpoint.hpp"
#include "coral/learners/messages.hpp"

namespace fs = std::filesystem;
using namespace coral::learners;
namespace lm = coral::learners::messages;
namespace actors = coral::actors;
using coral::config_error;
using coral::executor_mode;

namespace {

fs::path fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("coral-train-test-" + name);
  fs::remove_all(dir);
  return dir;
}

/// A small cartpole run on one thread: 8 envs, 512 steps per segment.
train_options small_run(std::uint64_t total_steps) {
  train_options o;
  o.sampler.env = "cartpole";
  o.sampler.num_envs = 8;
  o.sampler.topo = actors::topology::sync;
  o.sampler.executor = executor_mode::single;
  o.sampler.seed = 3;
  o.horizon = 64;
  o.total_steps = total_steps;
  o.progress_seconds = 0;
  return o;
}

std::string config_refusal(const train_options& o) {
  try {
    validate(o);
  } catch (const config_error& e) {
    return e.what();
  }
  return "(accepted)";
}

std::vector<char> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("an unknown --algo is rejected naming --algo and the allowed values, before anything starts",
          "[learners][train]") {
  auto o = small_run(1000);
  o.algo = "a2c";
  CHECK(config_refusal(o) == fmt::format(fmt::runtime(coral::messages::bad_value), "--algo", "a2c", "ppo, dqn"));
}

TEST_CASE("bad PPO flags are rejected naming the flag", "[learners][train]") {
  auto flag = [](auto change) {
    auto o = small_run(1000);
    change(o);
    return config_refusal(o);
  };
  const auto& f = actors::messages::flag_out_of_range;
  CHECK(flag([](train_options& o) { o.horizon = 0; }) == fmt::format(fmt::runtime(f), "--horizon", 0, "must be at least 1"));
  CHECK(flag([](train_options& o) { o.ppo.epochs = 0; }) == fmt::format(fmt::runtime(f), "--epochs", 0, "must be at least 1"));
  CHECK(flag([](train_options& o) { o.total_steps = 0; }) ==
        fmt::format(fmt::runtime(f), "--total-steps", 0, "must be at least 1"));
  CHECK(flag([](train_options& o) { o.ppo.gamma = 1.5; }) == fmt::format(fmt::runtime(f), "--gamma", 1.5, "must be in (0, 1]"));
  CHECK(flag([](train_options& o) { o.resume = true; }) == std::string(lm::resume_needs_dir));
  CHECK(flag([](train_options& o) { o.sampler.num_envs = 0; }) != "(accepted)");  // the sampler's own checks
}

TEST_CASE("a run ends with a result holding solved, env steps, wall time and mean return", "[learners][train]") {
  std::ostringstream progress;
  const auto o = small_run(4096);
  const auto r = train(o, progress);
  CHECK_FALSE(r.solved);
  CHECK_FALSE(r.interrupted);
  CHECK(r.env_steps >= 4096);
  CHECK(r.updates >= 7);
  CHECK(r.episodes > 0);
  CHECK(r.mean_return > 0);
  const auto json = r.to_json(o);
  CHECK(json.starts_with(R"({"solved":false,"interrupted":false,"env":"cartpole","algo":"ppo","topology":"sync",)"));
  CHECK(json.find(R"("wall_seconds":)") != std::string::npos);
  CHECK(json.find(fmt::format(R"("env_steps":{},)", r.env_steps)) != std::string::npos);
}

TEST_CASE("a resumed run continues from the newest checkpoint", "[learners][train][checkpoint]") {
  const auto dir = fresh_dir("resume");
  std::ostringstream progress;
  auto o = small_run(2048);
  o.checkpoint_dir = dir.string();
  const auto first = train(o, progress);
  REQUIRE_FALSE(first.checkpoint.empty());
  const auto saved = read_checkpoint(first.checkpoint);
  CHECK(saved.learner.updates == first.updates);
  CHECK(saved.learner.env_steps == 512 * first.updates);

  o.resume = true;
  o.total_steps = 4096;
  const auto second = train(o, progress);
  CHECK(progress.str().find("resumed from " + first.checkpoint) != std::string::npos);
  CHECK(second.updates > first.updates);
  CHECK(read_checkpoint(second.checkpoint).learner.env_steps > saved.learner.env_steps);
}

TEST_CASE("a corrupted or truncated checkpoint is refused on resume with a clear error", "[learners][train][checkpoint]") {
  const auto dir = fresh_dir("refuse");
  std::ostringstream progress;
  auto o = small_run(1024);
  o.checkpoint_dir = dir.string();
  const auto first = train(o, progress);
  auto bytes = read_bytes(first.checkpoint);
  o.resume = true;
  {
    auto bad = bytes;
    bad[bad.size() / 2] = static_cast<char>(bad[bad.size() / 2] ^ 0x10);
    std::ofstream(first.checkpoint, std::ios::binary | std::ios::trunc).write(bad.data(), static_cast<std::streamsize>(bad.size()));
    CHECK_THROWS_WITH(train(o, progress), fmt::format(fmt::runtime(lm::checkpoint_corrupted), first.checkpoint));
  }
  {
    std::ofstream(first.checkpoint, std::ios::binary | std::ios::trunc).write(bytes.data(), 100);
    CHECK_THROWS_WITH(train(o, progress),
                      fmt::format(fmt::runtime(lm::checkpoint_truncated), first.checkpoint, 100, bytes.size()));
  }
  fs::remove_all(dir);
  fs::create_directories(dir);
  CHECK_THROWS_WITH(train(o, progress), fmt::format(fmt::runtime(lm::no_checkpoint), dir.string()));
}

TEST_CASE("with --executor single two runs of a seed give identical results and checkpoints", "[learners][train][determinism]") {
  std::ostringstream progress;
  std::vector<std::vector<char>> checkpoints;
  std::vector<train_result> results;
  for (const char* name : {"det-a", "det-b"}) {
    const auto dir = fresh_dir(name);
    auto o = small_run(6000);
    o.sampler.topo = actors::topology::pool;
    o.checkpoint_dir = dir.string();
    results.push_back(train(o, progress));
    checkpoints.push_back(read_bytes(results.back().checkpoint));
  }
  CHECK(results[0].env_steps == results[1].env_steps);
  CHECK(results[0].mean_return == results[1].mean_return);
  CHECK(results[0].episodes == results[1].episodes);
  CHECK(results[0].updates == results[1].updates);
  CHECK(checkpoints[0] == checkpoints[1]);
}

TEST_CASE("a run writes its metrics rows and a learning curve to the run directory", "[learners][train]") {
  const auto dir = fresh_dir("metrics");
  std::ostringstream progress;
  auto o = small_run(2048);
  o.run_dir = dir.string();
  const auto r = train(o, progress);
  std::ifstream csv(dir / "metrics.csv");
  std::string header;
  std::getline(csv, header);
  CHECK(header.starts_with("seconds,env_steps,steps_per_second,episodes,mean_return,mean_length,policy_loss,"));
  std::size_t rows = 0;
  for (std::string line; std::getline(csv, line);) ++rows;
  CHECK(rows == r.updates + 1);  // one per update, and the final one
  if (std::system("command -v gnuplot > /dev/null 2>&1") == 0) {
    CHECK(fs::file_size(dir / "learning_curve.png") > 0);
  } else {
    CHECK(progress.str().find("warning: gnuplot not found; no learning_curve.png") != std::string::npos);
  }
}
