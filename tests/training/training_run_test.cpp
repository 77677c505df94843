#include "coral/training/training_run.hpp"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/watchdog.hpp"
#include "coral/core/error.hpp"
#include "coral/training/checkpoint.hpp"
#include "coral/training/checkpoint_dir.hpp"
#include "coral/training/errors.hpp"
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

/// Whether `text` holds `format` (an errors:: constant) with any values in
/// its `{}` fields: each fixed part, in order.
bool holds_format(const std::string& text, std::string_view format) {
  std::size_t at = 0;
  while (!format.empty()) {
    const auto field = format.find("{}");
    const auto part = format.substr(0, field);
    const auto found = text.find(part, at);
    if (found == std::string::npos) return false;
    at = found + part.size();
    if (field == std::string_view::npos) break;
    format.remove_prefix(field + 2);
  }
  return true;
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

TEST_CASE("a learner busy in one long update is not stalled; update after update on the same data is",
          "[training][training_run][stall]") {
  coral::test::watchdog dog("busy learner and same-data stall", 120s);
  const auto dir = fresh_path("training-run-busy");
  auto o = count_run(2048, executor_mode::threads);
  // Each update: 20 steps of 50 ms, the gate holding every group meanwhile:
  // a second in which env steps stand still, past a 0.3 s stall limit.
  auto& shape = options_of<test::count_options>(o);
  shape.update_steps = 20;
  shape.step_ms = 50;
  o.stall_seconds = 0.3;
  std::ostringstream progress;
  const auto r = training_run(o, progress).run();
  CHECK(r.env_steps == 2048);
  CHECK_FALSE(r.interrupted);
  CHECK(r.updates >= 1);

  // Updates without end on the data of the first, env steps held: a stall,
  // reported as such, and the learner's state kept in a checkpoint.
  shape.update_steps = 1;
  shape.step_ms = 1;
  shape.same_data = 1;
  o.total_steps = 100000;
  o.checkpoint_dir = (dir / "ckpt").string();
  std::ostringstream stalled;
  std::string what;
  try {
    (void)training_run(o, stalled).run();
  } catch (const actor_failed& e) {
    what = e.what();
  }
  INFO(what);
  CHECK(what.starts_with("actor 'stall-watchdog' failed: run stalled"));
  const auto same_data = coral::training::errors::stall_same_data;  // the report's last line: its newline trimmed
  CHECK(holds_format(what, same_data.substr(0, same_data.size() - 1)));
  CHECK(what.find("learner: ") != std::string::npos);
  INFO(stalled.str());
  REQUIRE(list_checkpoints(dir / "ckpt").checkpoints.size() == 1);
  const auto file = list_checkpoints(dir / "ckpt").checkpoints.front().file;
  CHECK(stalled.str().find(fmt::format(fmt::runtime(coral::training::errors::checkpoint_after_failure), file.string())) !=
        std::string::npos);
  CHECK(read_checkpoint(file).learner.updates > 1);
}

namespace {

/// A run of "count" whose first update is `steps` steps of `step_ms` each,
/// stopped as SIGINT stops it once the learner is in the update and has
/// taken `taken` of its steps (the learner asks for the stop there itself:
/// the moment is the event, not a guess of a polling thread).
struct stopped_update {
  train_result result;
  std::string progress;
  std::uint64_t steps = 0;  // the learner's steps in all
};
stopped_update stop_in_update(const fs::path& dir, std::uint64_t steps, std::uint64_t step_ms, std::uint64_t taken) {
  auto o = count_run(100000, executor_mode::threads);
  auto& shape = options_of<test::count_options>(o);
  shape.update_steps = steps;
  shape.step_ms = step_ms;
  shape.stop_before_step = taken + 1;
  o.checkpoint_dir = (dir / "ckpt").string();
  std::ostringstream progress;
  training_run run(o, progress);
  stopped_update out;
  out.result = run.run();
  out.progress = progress.str();
  out.steps = run.activity().steps();
  return out;
}

}  // namespace

TEST_CASE("a stop in the middle of a long update ends it at a step, checkpoint written", "[training][training_run][stop]") {
  coral::test::watchdog dog("stop inside an update", 120s);
  // One update of 100,000 steps of 1 ms: minutes, far past the stop deadline.
  const auto s = stop_in_update(fresh_path("training-run-stop-update"), 100000, 1, 10);
  CHECK(s.result.interrupted);
  CHECK(s.steps < 100000);
  REQUIRE_FALSE(s.result.checkpoint.empty());
  CHECK(read_checkpoint(s.result.checkpoint).learner.updates == 1);
}

TEST_CASE("a stop waits for a learner step longer than the stop deadline, and says so", "[training][training_run][stop]") {
  coral::test::watchdog dog("a step past the stop deadline", 120s);
  // Steps of 12 s, the stop asked as the first begins: the 10 s deadline
  // passes inside it.
  const auto s = stop_in_update(fresh_path("training-run-long-step"), 2, 12000, 0);
  INFO(s.progress);
  CHECK(s.result.interrupted);
  const auto waits = coral::training::errors::stop_waits_for_learner;
  CHECK(holds_format(s.progress, waits.substr(0, waits.find('{'))));
  CHECK(s.steps == 1);  // the step in progress finished; the second never began
  REQUIRE_FALSE(s.result.checkpoint.empty());
}

TEST_CASE("no checkpoint after a failure of the learner itself; one that cannot be written is said so",
          "[training][training_run][errors]") {
  coral::test::watchdog dog("checkpoints after failures", 60s);
  const auto dir = fresh_path("training-run-failure-checkpoint");
  auto o = count_run(100000, executor_mode::threads);
  options_of<test::count_options>(o).fail_update = 2;
  o.checkpoint_dir = (dir / "ckpt").string();
  std::ostringstream progress;
  CHECK_THROWS_WITH(training_run(o, progress).run(), Catch::Contains("count: failed at update 2"));
  CHECK(progress.str().find(fmt::format(fmt::runtime(coral::training::errors::no_checkpoint_after_failure), "learner",
                                        "failed", "none")) != std::string::npos);
  CHECK(list_checkpoints(dir / "ckpt").checkpoints.empty());

  // An env's failure, with the checkpoint directory gone under the run: the
  // write fails, and the run says so rather than claim a checkpoint.
  auto e = count_run(100000, executor_mode::threads);
  e.sampler.env = "faulty";
  e.sampler.env_args = {{"env", "0"}, {"throw_step", "2000"}};
  e.checkpoint_dir = (dir / "gone").string();
  // At the first metrics row (after the first update), long before the fault.
  bool removed = false;
  e.on_metrics_row = [&dir, &removed](std::string_view, std::string_view) {
    if (!removed) {
      fs::remove_all(dir / "gone");
      std::ofstream(dir / "gone") << "a file where the directory was";
      removed = true;
    }
    return true;
  };
  std::ostringstream lost;
  training_run run(e, lost, lost);
  CHECK_THROWS_WITH(run.run(), Catch::Contains("injected fault: step 2000"));
  REQUIRE(removed);
  INFO(lost.str());
  CHECK(holds_format(lost.str(), coral::training::errors::checkpoint_after_failure_failed));
}
