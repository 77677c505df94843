#include "coral/training/training_run.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../../training/src/tensorboard_file.hpp"
#include "../support/event_file_reader.hpp"
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
using coral::test::count_run;
using coral::test::fresh_path;

namespace {

/// count_run(2048) checkpointing into dir/ckpt every 1024 steps, keeping every checkpoint.
train_options checkpointed_count_run(const fs::path& dir) {
  auto o = count_run(2048);
  o.checkpoint_dir = (dir / "ckpt").string();
  o.checkpoint_every = 1024;
  o.keep_checkpoints = 0;
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

/// A metrics.csv: its header, and each row's env steps and fields.
struct csv_rows {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; std::getline(in, f, ',');) out.push_back(f);
  return out;
}

csv_rows read_csv(const fs::path& file) {
  std::ifstream in(file);
  csv_rows c;
  std::string line;
  std::getline(in, line);
  c.columns = csv_fields(line);
  while (std::getline(in, line)) c.rows.push_back(csv_fields(line));
  return c;
}

/// The scalar events (metrics rows) of the one event file in `dir`, and
/// its text summaries.
struct run_events {
  std::vector<test::tfevents::event> rows;
  std::vector<test::tfevents::event> texts;
};

run_events read_run_events(const fs::path& dir) {
  const auto files = test::tfevents::event_files_in(dir);
  REQUIRE(files.size() == 1);
  const auto events = test::tfevents::read_event_file(files.front());  // every record, both CRCs
  REQUIRE(!events.empty());
  CHECK(events.front().file_version == "brain.Event:2");
  run_events out;
  for (std::size_t i = 1; i < events.size(); ++i) {
    CHECK_FALSE(events[i].file_version.has_value());
    REQUIRE(!events[i].values.empty());
    (events[i].values[0].plugin_name ? out.texts : out.rows).push_back(events[i]);
  }
  return out;
}

/// Checks that the scalar events are metrics.csv's rows, one per env step
/// (a row at the steps of the one before it is not repeated): tag, step
/// and value of every column.
void check_events_match_csv(const run_events& ev, const csv_rows& csv) {
  std::vector<const std::vector<std::string>*> distinct;
  for (const auto& row : csv.rows) {
    if (distinct.empty() || std::stoull(row[1]) > std::stoull((*distinct.back())[1])) distinct.push_back(&row);
  }
  REQUIRE(ev.rows.size() == distinct.size());
  for (std::size_t r = 0; r < distinct.size(); ++r) {
    const auto& row = *distinct[r];
    const auto& e = ev.rows[r];
    CAPTURE(r, row[1]);
    CHECK(e.step == std::stoll(row[1]));
    REQUIRE(e.values.size() == csv.columns.size());
    for (std::size_t i = 0; i < csv.columns.size(); ++i) {
      CHECK(e.values[i].tag == training::detail::tensorboard_tag(csv.columns[i]));
      CHECK(e.values[i].simple_value == std::strtof(row[i].c_str(), nullptr));
    }
  }
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
  auto o = checkpointed_count_run(dir);
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

TEST_CASE("a run writes a TensorBoard event file: a scalar per metrics column at each row's env steps, and its "
          "settings as text",
          "[training][training_run][tensorboard]") {
  coral::test::watchdog dog("count algorithm event file", 60s);
  const auto dir = fresh_path("training-run-tensorboard");
  auto o = count_run(4096);
  o.run_dir = (dir / "run").string();
  std::ostringstream progress;
  const auto r = training_run(o, progress).run();
  REQUIRE(r.metrics_written);
  const auto csv = read_csv(dir / "run" / "metrics.csv");
  const auto ev = read_run_events(dir / "run");
  check_events_match_csv(ev, csv);
  CHECK(ev.rows.back().step == 4096);
  CHECK(ev.rows.front().values[0].tag == "charts/seconds");
  CHECK(ev.rows.front().values[4].tag == "charts/mean_return");
  CHECK(ev.rows.front().values[6].tag == "metrics/counted");
  // The settings, as config.toml holds them, in a Markdown code block.
  REQUIRE(ev.texts.size() == 1);
  CHECK(ev.texts[0].step == 0);
  const auto& text = ev.texts[0].values.at(0);
  CHECK(text.tag == "config");
  CHECK(text.plugin_name == "text");
  std::ifstream config(dir / "run" / "config.toml");
  std::string expected;
  for (std::string line; std::getline(config, line);) {
    if (!line.starts_with("#")) expected += "    " + line + "\n";
  }
  CHECK(text.string_val == std::vector<std::string>{expected});
  CHECK(expected.find("    algo = \"count\"\n") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a resumed run's event steps continue the killed run's without a gap or a duplicate",
          "[training][training_run][tensorboard][resume]") {
  coral::test::watchdog dog("count algorithm event file resumed", 60s);
  const auto dir = fresh_path("training-run-tensorboard-resume");
  auto o = checkpointed_count_run(dir);
  o.run_dir = (dir / "run").string();
  std::ostringstream progress;
  const auto first = training_run(o, progress).run();
  REQUIRE(first.env_steps == 2048);
  // As if killed after the checkpoint at 1024 steps: the final checkpoint
  // is not there, the rows up to 2048 are, and a record was cut in half.
  const auto listing = list_checkpoints(dir / "ckpt");
  REQUIRE(listing.checkpoints.size() >= 2);
  fs::remove(listing.checkpoints.front().file);
  const auto resumed_steps = read_checkpoint(listing.checkpoints[1].file).learner.env_steps;
  REQUIRE(resumed_steps < 2048);
  const auto killed = read_run_events(dir / "run");
  REQUIRE(killed.rows.back().step == 2048);
  const auto file = test::tfevents::event_files_in(dir / "run").front();
  const auto bytes = test::read_bytes(file);
  REQUIRE(bytes.size() > 30);
  // The head of the file's first record: a length whose CRC holds, its data cut short.
  std::ofstream(file, std::ios::binary | std::ios::app).write(bytes.data(), 30);

  o.resume = true;
  o.total_steps = 3072;
  const auto second = training_run(o, progress).run();
  REQUIRE(second.env_steps == 3072);
  CHECK(test::tfevents::event_files_in(dir / "run") == std::vector<fs::path>{file});  // the same file, continued
  const auto csv = read_csv(dir / "run" / "metrics.csv");
  const auto ev = read_run_events(dir / "run");  // the cut record is gone: every record reads
  check_events_match_csv(ev, csv);               // steps only grow, one row each, as metrics.csv's lineage
  std::size_t kept = 0;
  while (kept < ev.rows.size() && ev.rows[kept].step <= static_cast<std::int64_t>(resumed_steps)) ++kept;
  REQUIRE(kept >= 1);
  REQUIRE(kept < ev.rows.size());
  for (std::size_t i = 0; i < kept; ++i) {
    CHECK(ev.rows[i].step == killed.rows[i].step);  // the first run's, as written
    CHECK(ev.rows[i].values[0].simple_value == killed.rows[i].values[0].simple_value);
  }
  CHECK(ev.rows.back().step == 3072);
  // Each run's settings at the steps it started from.
  REQUIRE(ev.texts.size() == 2);
  CHECK(ev.texts[0].step == 0);
  CHECK(ev.texts[1].step == static_cast<std::int64_t>(resumed_steps));
  CHECK(ev.texts[1].values.at(0).string_val.at(0).find("    total-steps = 3072\n") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a run with tensorboard off writes no event file", "[training][training_run][tensorboard]") {
  coral::test::watchdog dog("count algorithm without event file", 60s);
  const auto dir = fresh_path("training-run-no-tensorboard");
  auto o = count_run(1024);
  o.run_dir = (dir / "run").string();
  o.tensorboard = false;
  std::ostringstream progress;
  const auto r = training_run(o, progress).run();
  CHECK(r.metrics_written);
  CHECK(fs::exists(dir / "run" / "metrics.csv"));
  CHECK(test::tfevents::event_files_in(dir / "run").empty());
  fs::remove_all(dir);
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
  // Each update: 10 steps of 400 ms, the gate holding every group meanwhile:
  // 4 s in which env steps stand still, past a 1.5 s stall limit. (The
  // limit leaves a step 1.1 s to be scheduled: under ThreadSanitizer on a
  // loaded machine, 0.3 s beside 50 ms steps was crossed.)
  auto& shape = options_of<test::count_options>(o);
  shape.update_steps = 10;
  shape.step_ms = 400;
  o.stall_seconds = 1.5;
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
