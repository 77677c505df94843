// `--algo r2d2` in the training composition: every topology and executor,
// bit-for-bit repeatable under --executor single, checkpoint and resume with
// the sequence replay, and the flags it refuses.

#include "coral/learners/r2d2.hpp"
#include "coral/learners/r2d2_learner.hpp"
#include "coral/learners/r2d2_policy.hpp"

#include <filesystem>
#include <thread>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/training/checkpoint.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/train.hpp"
#include "../support/test_envs.hpp"
#include "coral/learners/ppo.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/errors.hpp"
#include "../support/train_refusal.hpp"
#include "coral/distributed/bridge.hpp"
#include "coral/distributed/local_transport.hpp"

namespace fs = std::filesystem;
using namespace coral::learners;
using namespace coral::training;
namespace lm = coral::learners::errors;
namespace actors = coral::actors;
using coral::executor_mode;

namespace {

/// A short R2D2 run on cartpole: sequences of 8 (burn-in 2, overlap 2), an
/// LSTM of 16, updates from its first 500 steps on.
train_options small_r2d2(std::uint64_t total_steps) {
  train_options o;
  o.algo = "r2d2";
  o.sampler.env = "cartpole";
  o.sampler.num_envs = 8;
  o.sampler.topo = actors::topology::sync;
  o.sampler.executor = executor_mode::single;
  o.sampler.seed = 5;
  o.total_steps = total_steps;
  o.progress_seconds = 0;
  o.hidden = {16};
  options_of<r2d2_options>(o).lstm = 16;
  options_of<r2d2_options>(o).sequences.seq_len = 8;
  options_of<r2d2_options>(o).sequences.burn_in = 2;
  options_of<r2d2_options>(o).sequences.overlap = 2;
  options_of<r2d2_options>(o).q.n_step = 3;
  options_of<r2d2_options>(o).q.learning_starts = 500;
  options_of<r2d2_options>(o).q.replay_capacity = 1024;
  options_of<r2d2_options>(o).q.batch_size = 8;
  options_of<r2d2_options>(o).q.replay_ratio = 4;  // trained slots per env step: an update per 8 × 6 / 4 = 12 steps
  return o;
}

}  // namespace

TEST_CASE("coral train --algo r2d2 runs on every topology and executor, updating from sequences", "[learners][r2d2]") {
  auto t = GENERATE(actors::topology::sync, actors::topology::double_buffer, actors::topology::pool);
  auto mode = GENERATE(executor_mode::single, executor_mode::threads);
  CAPTURE(actors::to_string(t), coral::to_string(mode));
  auto o = small_r2d2(3000);
  o.sampler.topo = t;
  o.sampler.executor = mode;
  o.sampler.threads = 2;
  std::ostringstream progress;
  const auto r = train(o, progress);
  CHECK(r.env_steps >= 3000);
  CHECK(r.episodes > 0);
  // After 500 steps, 4 trained slots per env step, 8 sequences × 6 trained slots per update.
  CHECK(r.updates >= (3000 - 500) / 12 - 12);
  CHECK(r.updates <= (3000 + 96) / 12);
}

TEST_CASE("two R2D2 runs of a seed under --executor single are identical bit for bit", "[learners][r2d2]") {
  auto o = small_r2d2(3000);
  const auto dir = fs::temp_directory_path() / "coral-r2d2-test-repeat";
  fs::remove_all(dir);
  std::ostringstream p1, p2;
  o.checkpoint_dir = (dir / "a").string();
  const auto a = train(o, p1);
  o.checkpoint_dir = (dir / "b").string();
  const auto b = train(o, p2);
  CHECK(a.env_steps == b.env_steps);
  CHECK(a.episodes == b.episodes);
  CHECK(a.mean_return == b.mean_return);
  CHECK(a.updates == b.updates);
  CHECK(a.updates > 0);
  const auto ca = read_checkpoint(a.checkpoint), cb = read_checkpoint(b.checkpoint);
  CHECK(ca.learner.parameters == cb.learner.parameters);
  CHECK(ca.floats("target_parameters") == cb.floats("target_parameters"));
  CHECK(ca.records == cb.records);
}

TEST_CASE("an R2D2 run resumed from its checkpoint continues with the same sequence replay", "[learners][r2d2]") {
  const auto dir = fs::temp_directory_path() / "coral-r2d2-test-resume";
  fs::remove_all(dir);
  auto o = small_r2d2(3000);
  o.checkpoint_dir = dir.string();
  std::ostringstream first;
  const auto r1 = train(o, first);
  REQUIRE(!r1.checkpoint.empty());
  const auto c = read_checkpoint(r1.checkpoint);
  CHECK(c.algo == "r2d2");
  REQUIRE(c.record("replay") != nullptr);
  CHECK_FALSE(c.record("replay")->empty());
  CHECK(c.floats("target_parameters").size() == c.learner.parameters.size());
  CHECK(c.learner.updates == r1.updates);

  o.resume = true;
  o.total_steps = 5000;
  std::ostringstream second;
  const auto r2 = train(o, second);
  CHECK(second.str().find("sequences in replay") != std::string::npos);
  CHECK(second.str().find(" 0 sequences in replay") == std::string::npos);
  CHECK(r2.env_steps >= 5000);
  CHECK(r2.updates > r1.updates);
  // Updates went on from where the limiter stood: no second warm-up.
  CHECK(r2.updates - r1.updates >= (5000 - r1.env_steps) / 12 - 12);

  // PPO and DQN refuse the R2D2 checkpoint (with R2D2's settings at their
  // defaults: they refuse those first).
  for (const char* algo : {"ppo", "dqn"}) {
    auto p = o;
    p.algo = algo;
    p.algo_options.reset();  // the other algorithm's defaults
    std::ostringstream third;
    CHECK_THROWS_WITH(train(p, third), Catch::Contains("was written by --algo r2d2"));
  }
}

TEST_CASE("bad R2D2 flags are refused naming the flag, before anything starts", "[learners][r2d2][errors]") {
  auto check = [](auto change, const std::string& flag) {
    auto o = small_r2d2(3000);
    change(o);
    const auto why = coral::test::refusal(o);
    INFO(why);
    CHECK(why.rfind(flag + ":", 0) == 0);
  };
  check([](train_options& o) { options_of<r2d2_options>(o).lstm = 0; }, "--lstm");
  check([](train_options& o) { options_of<r2d2_options>(o).sequences.seq_len = 1; }, "--seq-len");
  check([](train_options& o) { options_of<r2d2_options>(o).sequences.burn_in = 8; }, "--burn-in");
  check([](train_options& o) { options_of<r2d2_options>(o).sequences.overlap = 9; }, "--seq-overlap");
  // Not given, the overlap is half a sequence; 0 is none (it once meant
  // "not given").
  CHECK(coral::learners::r2d2_config{}.effective_overlap() == 10);
  CHECK(coral::learners::r2d2_config{.seq_len = 80}.effective_overlap() == 40);
  CHECK(coral::learners::r2d2_config{.overlap = 0}.effective_overlap() == 0);
  auto none = small_r2d2(3000);
  options_of<r2d2_options>(none).sequences.overlap = 0;
  CHECK(coral::test::refusal(none) == "(accepted)");
  check([](train_options& o) { options_of<r2d2_options>(o).sequences.prefetch_batches = 0; }, "--prefetch-batches");
  check([](train_options& o) { options_of<r2d2_options>(o).sequences.priority_eta = 1.5; }, "--priority-eta");
  check([](train_options& o) { options_of<r2d2_options>(o).sequences.rescale_epsilon = 0; }, "--rescale-epsilon");
  check([](train_options& o) { options_of<r2d2_options>(o).q.n_step = 0; }, "--n-step");
  check([](train_options& o) { options_of<r2d2_options>(o).q.adam_epsilon = 2; }, "--adam-epsilon");
  check([](train_options& o) { options_of<r2d2_options>(o).q.batch_size = 2000; }, "--replay-batch");
  check([](train_options& o) { options_of<r2d2_options>(o).sequences.prefetch_batches = 200; }, "--prefetch-batches");
  check([](train_options& o) { options_of<r2d2_options>(o).q.learning_starts = 3000; }, "--learning-starts");
  check([](train_options& o) { options_of<r2d2_options>(o).q.learning_rate = 0; }, "--learning-rate");
  coral::test::register_test_envs();
  auto o = small_r2d2(3000);
  o.sampler.env = "test-target";
  std::ostringstream progress;
  CHECK_THROWS_WITH(train(o, progress), Catch::Contains("--algo r2d2: the action space must be one Discrete, not Box("));
}

TEST_CASE("R2D2 runs across ranks: two sampler ranks feed the learner's sequence replay", "[learners][r2d2][distributed]") {
  auto ranks = coral::distributed::local_transport::make(3);
  std::vector<train_result> results(3);
  std::vector<std::string> errors(3);
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      auto o = small_r2d2(4000);
      o.stop_when_solved = false;
      o.sampler.executor = executor_mode::threads;
      o.remote = coral::distributed::over(ranks[r]);
      std::ostringstream progress;
      try {
        results[r] = train(o, progress);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (std::size_t r = 0; r < 3; ++r) {
    CAPTURE(r, errors[r]);
    CHECK(errors[r].empty());
  }
  // The learner counts every sampler's steps and trained on their sequences.
  CHECK(results[0].env_steps >= 4000);
  CHECK(results[0].updates > 0);
  CHECK(results[1].env_steps + results[2].env_steps >= 4000);
}
