#include "coral/training/training_run.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/watchdog.hpp"
#include "coral/core/error.hpp"
#include "coral/training/checkpoint.hpp"
#include "coral/training/checkpoint_dir.hpp"
#include "../support/count_steps.hpp"
#include "../support/scratch_dir.hpp"

using namespace coral;
using namespace coral::training;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using coral::test::fresh_path;

namespace {

/// A run of the test-only "count" algorithm: 8 cartpole envs, updates every 64 steps per row.
train_options count_run(std::uint64_t total_steps, executor_mode mode = executor_mode::single) {
  register_algorithm(test::count_steps_descriptor());  // the one registration line
  train_options o;
  o.algo = "count";
  o.sampler.env = "cartpole";
  o.sampler.num_envs = 8;
  o.sampler.topo = actors::topology::pool;
  o.sampler.batch_size = 4;
  o.sampler.threads = 2;
  o.sampler.executor = mode;
  options_of<test::count_options>(o).horizon = 64;
  o.total_steps = total_steps;
  o.stop_when_solved = false;
  o.progress_seconds = 0;
  return o;
}

}  // namespace

TEST_CASE("a test-only algorithm of one file runs through the training composition", "[training][training_run]") {
  coral::test::watchdog dog("count algorithm", 60s);
  for (auto mode : {executor_mode::single, executor_mode::threads}) {
    INFO(coral::to_string(mode));
    const auto dir = fresh_path("training-run-count");
    auto o = count_run(4096, mode);
    o.run_dir = (dir / "run").string();
    std::ostringstream progress;
    const auto r = training_run(o, progress).run();
    CHECK(r.env_steps == 4096);  // the gate stops the run at --total-steps exactly
    CHECK_FALSE(r.interrupted);
    // One update falls due per 512 steps; the stop at the step limit may cut
    // the learner short of the last ones, never add updates.
    CHECK(r.updates >= 1);
    CHECK(r.updates <= 8);
    CHECK(r.episodes > 0);
    // Auto's group size: cartpole is far below 50 us a step, so the largest
    // group the batch takes.
    CHECK(progress.str().starts_with("coral train: env cartpole, count, topology pool, 8 envs in 2 groups of 4, batch 4"));
    CHECK(progress.str().find("counting steps every 512") != std::string::npos);
    // Auto's spin, resolved: none for cartpole's 4 x ~70 ns (50 us if the
    // probe ran slow, as under a sanitizer), never the auto sentinel.
    CHECK((progress.str().find(" executor, spin 0 us,") != std::string::npos ||
           progress.str().find(" executor, spin 50 us,") != std::string::npos));
    // Its metrics column sits between the common ones and the update count.
    std::ifstream csv(dir / "run" / "metrics.csv");
    std::string header;
    std::getline(csv, header);
    CHECK(header == "seconds,env_steps,steps_per_second,episodes,mean_return,mean_length,counted,updates");
    std::size_t rows = 0;
    for (std::string line; std::getline(csv, line);) ++rows;
    CHECK(rows == r.updates + 1);  // a row per update, and the final one
    CHECK(r.metrics_written);
  }
}

TEST_CASE("the composition checkpoints a plug-in's state on its cadence and resumes it", "[training][training_run]") {
  coral::test::watchdog dog("count algorithm checkpoints", 60s);
  const auto dir = fresh_path("training-run-count-resume");
  auto o = count_run(2048);
  o.checkpoint_dir = (dir / "ckpt").string();
  o.checkpoint_every = 1024;
  o.keep_checkpoints = 0;
  std::ostringstream first_progress;
  const auto first = training_run(o, first_progress).run();
  REQUIRE(first.env_steps == 2048);
  CHECK(list_checkpoints(dir / "ckpt").checkpoints.size() >= 2);  // 1024, and the final one at 2048
  const auto saved = read_checkpoint(first.checkpoint);
  CHECK(saved.algo == "count");
  CHECK(saved.network == "count");
  CHECK(saved.learner.env_steps == 2048);

  o.resume = true;
  o.total_steps = 3072;
  std::ostringstream progress;
  const auto second = training_run(o, progress).run();
  CHECK(second.resumed_from == first.checkpoint);
  CHECK(progress.str().find(fmt::format("resumed from {} (2048 env steps, {} updates, 2048 steps counted)",
                                        first.checkpoint, saved.learner.updates)) != std::string::npos);
  CHECK(second.env_steps == 3072);  // counted on from the checkpoint's steps
  CHECK(read_checkpoint(second.checkpoint).learner.env_steps == 3072);
}

TEST_CASE("--algo names only registered algorithms, listing them", "[training][training_run][errors]") {
  auto o = count_run(100);
  o.algo = "nope";
  std::ostringstream progress;
  try {
    training_run::validate(o);
    FAIL("accepted --algo nope");
  } catch (const config_error& e) {
    CHECK(std::string(e.what()) ==
          fmt::format(fmt::runtime(coral::errors::bad_value), "--algo", "nope", algorithm_names()));
    CHECK(algorithm_names().find("count") != std::string::npos);
  }
}
