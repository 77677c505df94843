// Multi-agent PPO, DQN and R2D2 runs through the one composition: every
// topology and executor on both backends, on an env whose waiting and empty
// slots hold NaN observations (a loss that saw one diverges) and which throws
// on an illegal action (a masked action taken fails the run); DQN learning
// population; refusals of what a multi-agent run cannot do.

#include "coral/learners/train.hpp"

#include <algorithm>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/turns_env.hpp"
#include "coral/actors/sampler_options.hpp"
#include "coral/core/error.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/ppo.hpp"
#include "coral/learners/r2d2.hpp"
#include "coral/training/algorithm_descriptor.hpp"

using namespace coral::learners;
using namespace coral::training;
namespace actors = coral::actors;

namespace multiagent_train_test {

/// A short PPO run on test-turns: 4 envs of 3 slots, segments of 16 steps.
train_options turns_run(actors::topology topo, coral::executor_mode mode, const std::string& backend) {
  coral::test::turns_env::register_once();
  train_options o;
  o.sampler.env = "test-turns";
  o.sampler.num_envs = 4;
  o.sampler.topo = topo;
  o.sampler.executor = mode;
  o.sampler.threads = 2;
  o.sampler.seed = 5;
  o.backend = backend;
  auto& p = options_of<ppo_options>(o);
  p.horizon = 16;
  p.ppo.minibatch_size = 32;
  o.total_steps = 4 * 3 * 16 * 12;
  o.stop_when_solved = false;
  o.progress_seconds = 0;
  return o;
}

}  // namespace multiagent_train_test

using namespace multiagent_train_test;

TEST_CASE("multi-agent PPO trains in every topology and executor, taking no masked action and no inactive row",
          "[learners][train][multi-agent]") {
  const std::string backend = GENERATE("fused", "torch");
  for (auto topo : {actors::topology::sync, actors::topology::double_buffer, actors::topology::pool}) {
    for (auto mode : {coral::executor_mode::single, coral::executor_mode::threads}) {
      INFO(backend << ", topology " << actors::to_string(topo) << ", " << coral::to_string(mode));
      auto o = turns_run(topo, mode, backend);
      std::string header;
      std::vector<std::string> rows;
      o.on_metrics_row = [&](std::string_view h, std::string_view row) {
        header = h;
        rows.emplace_back(row);
        return true;
      };
      std::ostringstream progress;
      train_result r;
      // An illegal action throws in the env; a NaN of an inactive row that
      // reached a loss would make the weights non-finite: either fails the run.
      REQUIRE_NOTHROW(r = train(o, progress));
      CHECK(r.env_steps == o.total_steps);
      CHECK(r.updates >= 10);
      // Episodes are per agent: a game for slots 0 and 1, a visit for slot 2.
      CHECK(r.episodes > 0);
      CHECK(r.mean_length < 3.5);
      CHECK(header.find(",agents_in_play,") != std::string::npos);
      REQUIRE_FALSE(rows.empty());
      // Slots 0 and 1 take turns, slot 2 is in 3 steps of 5: 1.6 per env on average.
      const auto columns = [](std::string_view line) {
        std::vector<std::string> out;
        std::string cell;
        for (const char c : line) {
          if (c == ',') {
            out.push_back(cell);
            cell.clear();
          } else {
            cell += c;
          }
        }
        out.push_back(cell);
        return out;
      };
      const auto names = columns(header);
      const auto at = std::find(names.begin(), names.end(), "agents_in_play") - names.begin();
      const double agents = std::stod(columns(rows.back())[static_cast<std::size_t>(at)]);
      CHECK(agents >= 1.0);
      CHECK(agents <= 2.0);
    }
  }
}

TEST_CASE("memory across steps on a multi-agent env is refused naming the flag and the env",
          "[learners][train][multi-agent]") {
  auto o = turns_run(actors::topology::sync, coral::executor_mode::single, "fused");
  std::ostringstream progress;
  SECTION("--frames") {
    options_of<ppo_options>(o).frames = 2;
    CHECK_THROWS_MATCHES(
        train(o, progress), coral::config_error,
        Catch::Message(fmt::format(fmt::runtime(errors::multi_agent_memory), "--frames", 2, "test-turns", 3)));
  }
  SECTION("--lstm") {
    options_of<ppo_options>(o).lstm = 8;
    o.backend = "torch";
    CHECK_THROWS_MATCHES(
        train(o, progress), coral::config_error,
        Catch::Message(fmt::format(fmt::runtime(errors::multi_agent_memory), "--lstm", 8, "test-turns", 3)));
  }
}

TEST_CASE("--lstm on an env that masks actions is refused naming the flag and the env, unless masks are off",
          "[learners][train][multi-agent]") {
  auto o = turns_run(actors::topology::sync, coral::executor_mode::single, "fused");
  o.sampler.env = "tictactoe";
  o.sampler.env_args = {{"opponent", "minimax"}};  // one slot, masked moves
  o.total_steps = 256;
  options_of<ppo_options>(o).lstm = 8;
  std::ostringstream progress;
  CHECK_THROWS_MATCHES(train(o, progress), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(errors::masked_lstm), 8, "tictactoe")));
  options_of<ppo_options>(o).ppo.action_masks = false;
  CHECK_NOTHROW(train(o, progress));
}

namespace multiagent_train_test {

/// A short DQN run on test-turns: 4 envs of 3 slots, updates from 500 steps on.
train_options turns_dqn_run(actors::topology topo, coral::executor_mode mode, const std::string& backend) {
  auto o = turns_run(topo, mode, backend);
  o.algo = "dqn";
  o.algo_options.reset();
  auto& d = options_of<dqn_config>(o);
  d.learning_starts = 500;
  d.batch_size = 32;
  d.replay_ratio = 4;
  d.replay_capacity = 12 * 256;
  return o;
}

/// A short R2D2 run on test-turns: 4 envs of 3 slots, sequences of 4 (a
/// burn-in of 1), updates from 500 steps on.
train_options turns_r2d2_run(actors::topology topo, coral::executor_mode mode, const std::string& backend) {
  auto o = turns_run(topo, mode, backend);
  o.algo = "r2d2";
  o.algo_options.reset();
  auto& r = options_of<r2d2_options>(o);
  r.lstm = 8;
  r.sequences.seq_len = 4;
  r.sequences.burn_in = 1;
  r.q.learning_starts = 500;
  r.q.batch_size = 8;
  r.q.replay_capacity = 512;
  r.q.replay_ratio = 4;
  return o;
}

/// Runs `make`'s run on test-turns in every topology and executor, on the
/// backend `backend`: each finishes, updates, and reports per-agent
/// episodes. An illegal action throws in the env; the NaN of an inactive
/// row (or of a waiting agent's final observation) in replay would make the
/// TD loss non-finite: either fails the run.
void trains_in_every_wiring(
    const std::string& backend,
    const std::function<train_options(actors::topology, coral::executor_mode, const std::string&)>& make) {
  for (auto topo : {actors::topology::sync, actors::topology::double_buffer, actors::topology::pool}) {
    for (auto mode : {coral::executor_mode::single, coral::executor_mode::threads}) {
      INFO(backend << ", topology " << actors::to_string(topo) << ", " << coral::to_string(mode));
      auto o = make(topo, mode, backend);
      std::string header;
      o.on_metrics_row = [&](std::string_view h, std::string_view) {
        header = h;
        return true;
      };
      std::ostringstream progress;
      train_result r;
      REQUIRE_NOTHROW(r = train(o, progress));
      CHECK(r.env_steps == o.total_steps);
      CHECK(r.updates >= 10);
      CHECK(r.episodes > 0);
      CHECK(r.mean_length < 3.5);  // per agent: a game of one or two moves, a visit of three steps
      CHECK(header.find(",agents_in_play,") != std::string::npos);
    }
  }
}

}  // namespace multiagent_train_test

TEST_CASE("multi-agent DQN trains in every topology and executor, taking no masked action and storing no inactive row",
          "[learners][train][multi-agent][dqn]") {
  trains_in_every_wiring(GENERATE(as<std::string>{}, "fused", "torch"), turns_dqn_run);
}

TEST_CASE("multi-agent DQN learns population to within 5% of its optimum, answering every cue among the legal ones",
          "[learners][train][multi-agent][dqn]") {
  // population's optimum at the defaults: (1 − 0.95^8) / (0.05 · 8) = 0.84
  // per agent; guessing among the legal answers scores a third of it.
  train_options o;
  o.algo = "dqn";
  o.sampler.env = "population";
  o.sampler.num_envs = 8;
  o.sampler.topo = actors::topology::sync;
  o.sampler.executor = coral::executor_mode::single;
  o.sampler.seed = 2;
  o.total_steps = 200'000;
  o.target_return = 0.8;
  o.progress_seconds = 0;
  std::ostringstream progress;
  const auto r = train(o, progress);
  INFO(progress.str());
  CHECK(r.solved);
  CHECK(r.mean_return >= 0.8);
}

TEST_CASE("a DQN replay too small for n-step + 2 transitions per agent slot is refused, counting the slots",
          "[learners][train][multi-agent][dqn]") {
  auto o = turns_dqn_run(actors::topology::sync, coral::executor_mode::single, "fused");
  auto& d = options_of<dqn_config>(o);
  d.replay_capacity = 4 * 3 * 4;  // 4 per slot, n-step 3 needs 5 (16 per env would do for 4 envs of one)
  d.batch_size = 8;
  d.prefetch = 2;
  std::ostringstream progress;
  CHECK_THROWS_MATCHES(train(o, progress), coral::config_error,
                       Catch::Message("--replay-capacity: 48 is invalid: must hold at least n-step + 2 = 5 "
                                      "transitions per agent slot (4 envs of 3 slots)"));
}

TEST_CASE("multi-agent R2D2 trains in every topology and executor, taking no masked action and storing no inactive row",
          "[learners][train][multi-agent][r2d2]") {
  trains_in_every_wiring(GENERATE(as<std::string>{}, "fused", "torch"), turns_r2d2_run);
}
