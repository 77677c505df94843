#include "coral/learners/train.hpp"

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/actors/errors.hpp"
#include "coral/core/error.hpp"
#include "coral/training/checkpoint.hpp"
#include "coral/training/checkpoint_dir.hpp"
#include "coral/learners/errors.hpp"
#include "../support/count_steps.hpp"
#include "../support/scratch_dir.hpp"
#include "coral/learners/ppo.hpp"
#include "coral/learners/r2d2.hpp"
#include "coral/learners/r2d2_learner.hpp"
#include "coral/learners/r2d2_policy.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/errors.hpp"
#include "../support/train_refusal.hpp"

namespace fs = std::filesystem;
using coral::test::fresh_path;
using coral::test::read_bytes;
using namespace coral::learners;
using namespace coral::training;
namespace lm = coral::learners::errors;
namespace te = coral::training::errors;
namespace actors = coral::actors;
using coral::config_error;
using coral::executor_mode;

namespace {

/// A small cartpole run on one thread: 8 envs, 512 steps per segment.
train_options small_run(std::uint64_t total_steps) {
  train_options o;
  o.sampler.env = "cartpole";
  o.sampler.num_envs = 8;
  o.sampler.topo = actors::topology::sync;
  o.sampler.executor = executor_mode::single;
  o.sampler.seed = 3;
  options_of<ppo_options>(o).horizon = 64;
  o.total_steps = total_steps;
  o.progress_seconds = 0;
  return o;
}

}  // namespace

TEST_CASE("an unknown --algo is rejected naming --algo and the allowed values, before anything starts",
          "[learners][train]") {
  auto o = small_run(1000);
  o.algo = "a2c";
  CHECK(coral::test::refusal(o) == fmt::format(fmt::runtime(coral::errors::bad_value), "--algo", "a2c", "ppo, dqn, r2d2"));
}

TEST_CASE("bad PPO flags are rejected naming the flag", "[learners][train]") {
  auto flag = [](auto change) {
    auto o = small_run(1000);
    change(o);
    return coral::test::refusal(o);
  };
  const auto& f = actors::errors::flag_out_of_range;
  CHECK(flag([](train_options& o) { options_of<ppo_options>(o).horizon = 0; }) == fmt::format(fmt::runtime(f), "--horizon", 0, "must be at least 1"));
  CHECK(flag([](train_options& o) { options_of<ppo_options>(o).ppo.epochs = 0; }) == fmt::format(fmt::runtime(f), "--epochs", 0, "must be at least 1"));
  CHECK(flag([](train_options& o) { o.total_steps = 0; }) ==
        fmt::format(fmt::runtime(f), "--total-steps", 0, "must be at least 1"));
  CHECK(flag([](train_options& o) { options_of<ppo_options>(o).ppo.gamma = 1.5; }) == fmt::format(fmt::runtime(f), "--gamma", 1.5, "must be in (0, 1]"));
  CHECK(flag([](train_options& o) { options_of<ppo_options>(o).ppo.adam_epsilon = 0; }) ==
        fmt::format(fmt::runtime(f), "--adam-epsilon", 0, "must be in (0, 1]"));
  CHECK(flag([](train_options& o) { options_of<ppo_options>(o).lstm = 4; options_of<ppo_options>(o).frames = 0; }) ==
        fmt::format(fmt::runtime(f), "--frames", 0, "must be at least 1"));
  CHECK(flag([](train_options& o) { o.resume = true; }) == std::string(te::resume_needs_dir));
  CHECK(flag([](train_options& o) { o.sampler.num_envs = 0; }) != "(accepted)");  // the sampler's own checks
}

TEST_CASE("a setting only other built-in algorithms declare is refused, naming the algorithms that declare it",
          "[learners][train][errors]") {
  register_builtin_algorithms();
  const auto refusal = [](std::string_view name, std::string_view algo) -> std::string {
    try {
      check_setting_declared(name, algo);
      return "(accepted)";
    } catch (const coral::config_error& e) {
      return e.what();
    }
  };
  CHECK(refusal("replay-capacity", "ppo") == "--replay-capacity: DQN and R2D2 only; --algo ppo does not take it");
  CHECK(refusal("replay-capacity", "dqn") == "(accepted)");
  CHECK(refusal("replay-capacity", "r2d2") == "(accepted)");
  CHECK(refusal("lstm", "dqn") == "--lstm: PPO and R2D2 only; --algo dqn does not take it");
  CHECK(refusal("frames", "r2d2") == "--frames: PPO only; --algo r2d2 does not take it");
  CHECK(refusal("obs-norm", "dqn") == "--obs-norm: PPO only; --algo dqn does not take it");
  CHECK(refusal("no-double-dqn", "r2d2") == "--no-double-dqn: DQN only; --algo r2d2 does not take it");
  CHECK(refusal("seq-len", "ppo") == "--seq-len: R2D2 only; --algo ppo does not take it");
  CHECK(refusal("horizon", "dqn") == "--horizon: PPO only; --algo dqn does not take it");
  for (const std::string_view algo : {"ppo", "dqn", "r2d2"}) {
    for (const std::string_view name : {"learning-rate", "gamma", "max-grad-norm", "adam-epsilon"}) {
      CAPTURE(algo, name);
      CHECK(refusal(name, algo) == "(accepted)");
    }
  }
}

TEST_CASE("a run given no algorithm options gets its descriptor's defaults: R2D2's own, not DQN's",
          "[learners][train]") {
  register_builtin_algorithms();
  train_options o;
  o.algo = "r2d2";
  const auto settings = algorithm_settings(o);
  const auto value = [&](std::string_view name) {
    for (const auto& [n, v] : settings) {
      if (n == name) return v;
    }
    return std::string("(none)");
  };
  CHECK(value("replay-capacity") == "5000");
  CHECK(value("replay-batch") == "32");
  CHECK(value("learning-rate") == "0.001");
  CHECK(value("target-update") == "100");
  CHECK(value("lstm") == "64");
  CHECK(value("frames") == "(none)");
  o.algo = "dqn";
  CHECK(algorithm_settings(o).front() == std::pair<std::string, std::string>{"learning-rate", "0.0005"});
  // Options of another algorithm's type are a misuse, refused before a run.
  o.algo_options = ppo_options{};
  CHECK_THROWS_AS(validate(o), coral::usage_error);
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
  const auto dir = fresh_path("train-resume");
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
  const auto dir = fresh_path("train-refuse");
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
    CHECK_THROWS_WITH(train(o, progress), fmt::format(fmt::runtime(te::checkpoint_corrupted), first.checkpoint));
  }
  {
    std::ofstream(first.checkpoint, std::ios::binary | std::ios::trunc).write(bytes.data(), 100);
    CHECK_THROWS_WITH(train(o, progress),
                      fmt::format(fmt::runtime(te::checkpoint_truncated), first.checkpoint, 100, bytes.size()));
  }
  fs::remove_all(dir);
  fs::create_directories(dir);
  CHECK_THROWS_WITH(train(o, progress), fmt::format(fmt::runtime(te::no_checkpoint), dir.string()));
}

TEST_CASE("with --executor single two runs of a seed give identical results and checkpoints", "[learners][train][determinism]") {
  std::ostringstream progress;
  std::vector<std::vector<char>> checkpoints;
  std::vector<train_result> results;
  for (const char* name : {"det-a", "det-b"}) {
    const auto dir = fresh_path(std::string("train-") + name);
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
  const auto dir = fresh_path("train-metrics");
  std::ostringstream progress;
  auto o = small_run(2048);
  o.run_dir = dir.string();
  const auto r = train(o, progress, progress);
  std::ifstream csv(dir / "metrics.csv");
  std::string header;
  std::getline(csv, header);
  CHECK(header.starts_with("seconds,env_steps,steps_per_second,episodes,mean_return,mean_length,policy_loss,"));
  std::size_t rows = 0;
  for (std::string line; std::getline(csv, line);) ++rows;
  CHECK(rows == r.updates + 1);  // one per update, and the final one
  CHECK(r.metrics_written);
  if (progress.str().find(te::gnuplot_not_found) == std::string::npos) {  // gnuplot is installed
    CHECK(fs::file_size(dir / "learning_curve.png") > 0);
  }
}

namespace {

/// What train() refused `o` with (config_error or checkpoint_error), and what it printed first.
struct refused_run {
  std::string what = "(accepted)";
  std::string progress;
};

refused_run refused(const train_options& o) {
  std::ostringstream progress;
  refused_run r;
  try {
    (void)train(o, progress);
  } catch (const coral::error& e) {
    r.what = e.what();
  }
  r.progress = progress.str();
  return r;
}

/// The errno of creating `file` (0 if it could be created; it is then removed).
int errno_of_creating(const char* file) {
  const int fd = ::open(file, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return errno;
  ::close(fd);
  ::unlink(file);
  return 0;
}

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("a run directory with quotes, semicolons, backquotes and $() in its name reaches no shell",
          "[learners][train][run-dir]") {
  const auto base = fresh_path("train-injection");
  const std::vector<std::string> markers{"PWNED1", "PWNED2", "PWNED3"};
  for (const auto& m : markers) fs::remove(m);
  auto o = small_run(1024);
  const auto dir = base / "x'; touch PWNED1; echo '`touch PWNED2`$(touch PWNED3)\"";
  o.run_dir = dir.string();
  std::ostringstream progress;
  const auto r = train(o, progress, progress);
  for (const auto& m : markers) {
    INFO(m);
    CHECK_FALSE(fs::exists(m));
    CHECK_FALSE(fs::exists(base / m));
  }
  CHECK(r.metrics_written);
  if (progress.str().find(te::gnuplot_not_found) == std::string::npos) {
    CHECK(progress.str().find("warning") == std::string::npos);
    CHECK(fs::file_size(dir / "learning_curve.png") > 0);
  }
  // The kept script names its files relative to the run directory.
  const auto script = lines_of(dir / "learning_curve.gp");
  CHECK(std::find(script.begin(), script.end(), "set output 'learning_curve.png'") != script.end());
}

TEST_CASE("unusable run and checkpoint directories are refused by name before anything starts",
          "[learners][train][run-dir]") {
  const auto base = fresh_path("train-dirs");
  fs::create_directories(base);
  const auto file = base / "good.toml";
  std::ofstream(file) << "[train]\n";
  const auto not_a_dir = std::generic_category().message(ENOTDIR);

  auto o = small_run(1024);
  o.checkpoint_dir = (file / "sub").string();
  auto r = refused(o);
  CHECK(r.what == fmt::format(fmt::runtime(te::dir_unusable), "--checkpoint-dir", o.checkpoint_dir, not_a_dir));
  CHECK(r.progress.empty());  // nothing started

  o = small_run(1024);
  o.run_dir = file.string();
  r = refused(o);
  CHECK(r.what == fmt::format(fmt::runtime(te::dir_unusable), "--run-dir", o.run_dir, te::not_a_directory));
  CHECK(r.progress.empty());

  o.run_dir = (file / "sub").string();
  CHECK(refused(o).what == fmt::format(fmt::runtime(te::dir_unusable), "--run-dir", o.run_dir, not_a_dir));

  o.run_dir = "/proc";  // a directory nobody may create files in
  r = refused(o);
  // The system's reason: ENOENT as root, EACCES otherwise.
  const int reason = errno_of_creating("/proc/.coral-train-test");
  CHECK((reason == ENOENT || reason == EACCES));
  CHECK(r.what == fmt::format(fmt::runtime(te::dir_unusable), "--run-dir", "/proc",
                              fmt::format(fmt::runtime(te::not_writable), std::strerror(reason))));
  CHECK(r.progress.empty());

  // A usable directory keeps no trace of the test write (`.coral.lock`,
  // the lock a run holds on it, stays: removing it would race a new holder).
  o = small_run(1024);
  o.run_dir = (base / "run").string();
  o.checkpoint_dir = (base / "ckpt").string();
  std::ostringstream progress;
  (void)train(o, progress);
  for (const auto& d : {base / "run", base / "ckpt"}) {
    for (const auto& e : fs::directory_iterator(d)) {
      CHECK_FALSE(e.path().filename().string().starts_with(".coral-write-test"));
    }
  }
}

TEST_CASE("a metrics file that cannot be written is reported and never claimed as written",
          "[learners][train][run-dir]") {
  const auto dir = fresh_path("train-full");
  fs::create_directories(dir);
  fs::create_symlink("/dev/full", dir / "metrics.csv");  // every write fails with ENOSPC
  auto o = small_run(1024);
  o.run_dir = dir.string();
  std::ostringstream progress;
  const auto r = train(o, progress, progress);
  CHECK_FALSE(r.metrics_written);
  CHECK(progress.str().find(fmt::format(fmt::runtime(te::metrics_write_failed), (dir / "metrics.csv").string(),
                                        std::strerror(ENOSPC))) != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "learning_curve.png"));
}

TEST_CASE("a fresh run into a directory holding checkpoints is refused, and killed writes' temporaries are cleared",
          "[learners][train][checkpoint]") {
  const auto dir = fresh_path("train-in-use");
  fs::create_directories(dir);
  std::ofstream(dir / "checkpoint-000000000512.ckpt.tmp") << "cut short";
  auto o = small_run(1024);
  o.checkpoint_dir = dir.string();
  std::ostringstream progress;
  const auto first = train(o, progress);
  CHECK_FALSE(fs::exists(dir / "checkpoint-000000000512.ckpt.tmp"));
  const auto r = refused(o);
  CHECK(r.what == fmt::format(fmt::runtime(te::checkpoint_dir_in_use), dir.string(), first.checkpoint));
  CHECK(r.progress.empty());
  CHECK(read_checkpoint(first.checkpoint).learner.env_steps == first.env_steps);  // untouched
}

TEST_CASE("a checkpoint of another run is refused on resume: algo, env, network and seed",
          "[learners][train][checkpoint]") {
  const auto dir = fresh_path("train-identity");
  auto o = small_run(1024);
  o.checkpoint_dir = dir.string();
  std::ostringstream progress;
  const auto first = train(o, progress);
  const auto saved = peek_checkpoint(first.checkpoint);
  o.resume = true;
  auto change = [&](auto how) {
    auto changed = o;
    how(changed);
    return refused(changed).what;
  };
  const auto& mismatch = te::checkpoint_mismatch;
  CHECK(change([](train_options& c) { c.sampler.seed = 7; }) ==
        fmt::format(fmt::runtime(mismatch), first.checkpoint, "seed", 3, 7));
  CHECK(change([](train_options& c) { c.sampler.env = "bandit"; }) ==
        fmt::format(fmt::runtime(mismatch), first.checkpoint, "env", "cartpole", "bandit"));
  CHECK(change([](train_options& c) { c.hidden = {16}; })
            .starts_with(fmt::format(fmt::runtime(mismatch), first.checkpoint, "network", saved.network, "")));
  CHECK(change([](train_options& c) {
          c.algo = "dqn";
          c.algo_options = dqn_config{};
          options_of<dqn_config>(c).replay_capacity = 4096;
        }) == fmt::format(fmt::runtime(te::checkpoint_algo), first.checkpoint, "ppo", "dqn"));
  CHECK(peek_checkpoint(first.checkpoint).env_steps == first.env_steps);  // refused runs wrote nothing
  CHECK(list_checkpoints(dir).checkpoints.size() == 1);

  // Weights one short, with the run's identity (a hand-made file): once an
  // error that named no file.
  auto c = read_checkpoint(first.checkpoint);
  for (auto* v : {&c.learner.parameters, &c.learner.adam_m, &c.learner.adam_v}) v->pop_back();
  write_checkpoint(first.checkpoint, c);
  CHECK_THAT(refused(o).what,
             Catch::StartsWith(fmt::format(fmt::runtime(te::checkpoint_does_not_fit), first.checkpoint, "")));
}

TEST_CASE("resume continues the checkpoint with the most recorded steps, past a stray file and a directory, and prunes",
          "[learners][train][checkpoint]") {
  const auto dir = fresh_path("train-recorded-steps");
  auto o = small_run(2048);
  o.checkpoint_dir = dir.string();
  o.checkpoint_every = 512;
  o.keep_checkpoints = 0;
  std::ostringstream progress;
  (void)train(o, progress);
  CHECK(list_checkpoints(dir).checkpoints.size() == 4);  // 512, 1024, 1536, 2048
  // The oldest under the greatest name, and a directory named like a checkpoint.
  fs::rename(checkpoint_path(dir, 512), dir / "checkpoint-999999999999.ckpt");
  const auto directory = dir / "checkpoint-999999999998.ckpt";
  fs::create_directories(directory);

  o.resume = true;
  o.total_steps = 3072;
  o.keep_checkpoints = 2;
  std::ostringstream second_progress;
  const auto second = train(o, second_progress, second_progress);
  const auto newest = checkpoint_path(dir, 2048).string();
  CHECK(second.resumed_from == newest);
  CHECK(second_progress.str().find("resumed from " + newest + " (2048 env steps") != std::string::npos);
  CHECK(second_progress.str().find(fmt::format(
            fmt::runtime(te::checkpoint_skipped),
            fmt::format(fmt::runtime(te::checkpoint_not_a_file), directory.string()))) != std::string::npos);
  // Kept: the two newest of the run (2560 and 3072); the directory is left alone.
  const auto listing = list_checkpoints(dir);
  REQUIRE(listing.checkpoints.size() == 2);
  CHECK(listing.checkpoints[0].file == checkpoint_path(dir, 3072));
  CHECK(listing.checkpoints[1].file == checkpoint_path(dir, 2560));
  CHECK(second.checkpoint == checkpoint_path(dir, 3072).string());
  CHECK(fs::is_directory(directory));
}

TEST_CASE("a resumed run appends to metrics.csv and names the checkpoint it continued in its JSON",
          "[learners][train][checkpoint][run-dir]") {
  const auto base = fresh_path("train-append");
  auto o = small_run(1024);
  o.checkpoint_dir = (base / "ckpt").string();
  o.run_dir = (base / "run").string();
  std::ostringstream progress;
  const auto first = train(o, progress);
  CHECK(first.metrics_written);
  CHECK(first.to_json(o).ends_with(R"("resumed_from":null})"));
  const auto csv = base / "run" / "metrics.csv";
  const auto rows_before = lines_of(csv);

  o.resume = true;
  o.total_steps = 2048;
  const auto second = train(o, progress);
  CHECK(second.metrics_written);
  CHECK(second.to_json(o).ends_with(fmt::format(R"("resumed_from":"{}"}})", first.checkpoint)));
  const auto rows = lines_of(csv);
  REQUIRE(rows.size() > rows_before.size());
  CHECK(std::equal(rows_before.begin(), rows_before.end(), rows.begin()));  // the first run's rows are kept
  CHECK(std::count(rows.begin(), rows.end(), rows.front()) == 1);           // one header
  CHECK(rows.size() == 1 + (first.updates + 1) + (second.updates - first.updates + 1));

  // A run directory with another kind of run's metrics is refused on resume.
  std::ofstream(csv, std::ios::trunc) << "seconds,env_steps,td_loss\n1,2,3\n";
  o.total_steps = 3072;
  CHECK(refused(o).what == fmt::format(fmt::runtime(te::metrics_header_differs), csv.string()));
  CHECK(lines_of(csv).size() == 2);
}

TEST_CASE("a learner whose loss or weights stop being finite stops the run naming the learner and the term",
          "[learners][train][finite]") {
  // Rewards of 1e30 are finite, but their squared value errors are not.
  // (DQN's Huber loss and clipped gradients stay finite at any rate; its
  // checks are the same two calls, tested below on their own.)
  const std::string algo = "ppo";
  auto o = small_run(20'000);
  o.sampler.env = "faulty";
  o.sampler.env_args = {{"env", "-1"}, {"reward_scale", "1e30"}};
  o.stop_when_solved = false;  // a return of 1e30 solves cartpole
  std::ostringstream progress;
  try {
    const auto r = train(o, progress);
    FAIL("the run did not stop: " << r.updates << " updates\n" << progress.str());
  } catch (const coral::actor_failed& e) {
    CHECK(e.actor() == "learner");
    CHECK_THAT(e.what(), Catch::StartsWith("actor 'learner' failed: " + algo + " learner: "));
    CHECK_THAT(e.what(), Catch::Contains(" is not finite ("));
    CHECK_THAT(e.what(), Catch::EndsWith("training diverged (lower --learning-rate, or --allow-non-finite to go on)"));
  }
  // With the checks off the run goes on to its end.
  o.sampler.check_finite = false;
  o.total_steps = 3000;
  CHECK(train(o, progress).env_steps >= 3000);
}

TEST_CASE("under --on-env-error reset a failed step is no episode: PPO records no phantom episodes",
          "[learners][train][faults]") {
  // Every third step of every env throws; a cartpole episode lasts at least
  // eight steps, so no episode can end normally, and none may be counted.
  auto o = small_run(3000);
  o.sampler.env = "faulty";
  o.sampler.env_args = {{"env", "-1"}, {"throw_step", "3"}, {"repeat", "true"}};
  o.sampler.on_env_error = actors::env_error_policy::reset;
  std::ostringstream progress;
  const auto r = train(o, progress);
  CHECK(r.env_steps >= 3000);
  CHECK(r.episodes == 0);
}

TEST_CASE("coral train's entry point runs a test-only algorithm added with one registration line",
          "[learners][train][algorithm]") {
  coral::training::register_algorithm(coral::test::count_steps_descriptor());
  auto o = small_run(2048);
  o.algo = "count";
  o.algo_options = coral::test::count_options{.horizon = 64};
  std::ostringstream progress;
  const auto r = train(o, progress);
  CHECK(r.env_steps == 2048);
  CHECK(r.updates >= 1);  // one falls due per 512 steps; the stop may cut the last ones
  CHECK(r.updates <= 4);
  CHECK(progress.str().find(", count, topology sync,") != std::string::npos);
  CHECK(r.to_json(o).find(R"("algo":"count")") != std::string::npos);
}

TEST_CASE("a policy lag bound beyond the run's segments, up to 2^64 - 1, runs like an unbounded one",
          "[learners][train][rollout]") {
  // 2^64 - 1 once made the assembler's channel lag + 2 = 1 segment long,
  // and the run failed with "the segments channel is full".
  auto o = small_run(4096);
  options_of<ppo_options>(o).max_policy_lag = std::numeric_limits<std::size_t>::max();
  std::ostringstream progress;
  const auto r = train(o, progress);
  CHECK(r.env_steps == 4096);
  CHECK_FALSE(r.interrupted);
  CHECK(r.updates >= 1);
}

TEST_CASE("only --backend torch needs libtorch: every built-in network is the fused engine's, --lstm too",
          "[learners][train][backend]") {
  for (const char* algo : {"ppo", "dqn", "r2d2"}) {
    CAPTURE(algo);
    train_options o;
    o.algo = algo;
    if (o.algo == "ppo") options_of<ppo_options>(o).lstm = 16;
    CHECK_FALSE(needs_torch(o));
    o.backend = "torch";
    CHECK(needs_torch(o));
  }
}
