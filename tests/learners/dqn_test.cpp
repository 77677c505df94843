#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/q_policy.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "coral/actors/errors.hpp"
#include "coral/actors/sampler_options.hpp"
#include "coral/core/error.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/training/checkpoint.hpp"
#include "coral/training/checkpoint_dir.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/train.hpp"
#include "coral/replay/errors.hpp"
#include "coral/replay/replay_actor.hpp"
#include "../support/watchdog.hpp"
#include "../support/test_envs.hpp"
#include "../support/scratch_dir.hpp"
#include "coral/learners/ppo.hpp"
#include "coral/learners/r2d2.hpp"
#include "coral/learners/r2d2_learner.hpp"
#include "coral/learners/r2d2_policy.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/errors.hpp"
#include "../support/train_refusal.hpp"
#include "../support/run_json.hpp"

namespace fs = std::filesystem;
using coral::test::fresh_path;
using namespace coral::learners;
using namespace coral::training;
namespace lm = coral::learners::errors;
namespace te = coral::training::errors;
namespace actors = coral::actors;
using coral::executor_mode;

namespace {

/// A short DQN run on cartpole that updates from its first thousand steps on.
train_options small_dqn(std::uint64_t total_steps) {
  train_options o;
  o.algo = "dqn";
  o.sampler.env = "cartpole";
  o.sampler.num_envs = 8;
  o.sampler.topo = actors::topology::sync;
  o.sampler.executor = executor_mode::single;
  o.sampler.seed = 5;
  o.total_steps = total_steps;
  o.progress_seconds = 0;
  options_of<dqn_config>(o).learning_starts = 500;
  options_of<dqn_config>(o).replay_capacity = 4096;
  options_of<dqn_config>(o).batch_size = 32;
  options_of<dqn_config>(o).replay_ratio = 4;
  return o;
}

/// small_dqn(total_steps) on topology `t` with executor `mode` (two sampling threads).
train_result run_small(actors::topology t, executor_mode mode, std::uint64_t total_steps,
                       std::uint64_t learning_starts = 500) {
  auto o = small_dqn(total_steps);
  options_of<dqn_config>(o).learning_starts = learning_starts;
  o.sampler.topo = t;
  o.sampler.executor = mode;
  o.sampler.threads = 2;
  std::ostringstream progress;
  return train(o, progress);
}

}  // namespace

TEST_CASE("the DQN policy explores from epsilon 1 down to each env's rung and acts greedily on Q", "[learners][dqn]") {
  coral::envs::space obs = coral::envs::space::box({2}, -1, 1);
  coral::envs::space act = coral::envs::space::discrete(3);
  const auto spec = network_spec::from_spaces(obs, act, {4}, 1);
  dqn_config c;
  c.epsilon_base = 0.5;
  c.epsilon_alpha = 3;
  c.exploration_steps = 100;
  const std::size_t rows = 4;
  q_policy p(spec, rows, 1, c);
  CHECK(p.epsilon(0) == Approx(1.0));
  // Weights that make action 2 the best everywhere: only the last bias is non-zero.
  const auto widths = q_network_widths(spec, act.to_string());
  std::vector<float> w(2 * 4 + 4 + 4 * 3 + 3, 0.0f);
  w.back() = 1.0f;
  p.load_weights(w);
  coral::envs::env_batch batch(rows, obs, act);
  std::vector<actors::row_range> ranges{{0, static_cast<std::uint32_t>(rows)}};
  std::vector<float> values(rows);
  std::size_t greedy_last_row = 0;
  std::size_t greedy_first_row = 0;
  for (int i = 0; i < 200; ++i) {
    p.act({.batch = batch, .ranges = ranges, .log_probs = {}, .values = values});
    if (i >= 25) {  // past the 100 steps of exploration
      greedy_last_row += batch.discrete_actions().row(3)[0] == 2 ? 1 : 0;
      greedy_first_row += batch.discrete_actions().row(0)[0] == 2 ? 1 : 0;
    }
    CHECK(values[0] == Approx(1.0f));
  }
  // 200 batches of 4 rows: 800 env steps, past the 100 of exploration.
  CHECK(p.epsilon(0) == Approx(0.5));
  CHECK(p.epsilon(3) == Approx(std::pow(0.5, 4)));
  // 175 batches: the last row (epsilon 1/16) picks action 2 with probability
  // 1 − (1/16)(2/3) ≈ 0.958 (mean 167.7, sd 2.7); the first (epsilon 1/2)
  // with 2/3 (mean 116.7, sd 6.2).
  CHECK(greedy_last_row >= 158);
  CHECK(greedy_first_row >= 95);
  CHECK(greedy_first_row <= 138);
  CHECK_THROWS_AS(p.load_weights(std::vector<float>(3)), coral::usage_error);
  CHECK(widths == std::vector<std::size_t>{2, 4, 3});
}

TEST_CASE("the DQN policy acts for active rows only, among their legal actions, one rung per env",
          "[learners][dqn][multi-agent][masks]") {
  coral::envs::space obs = coral::envs::space::box({2}, -1, 1);
  coral::envs::space act = coral::envs::space::discrete(3);
  const auto spec = network_spec::from_spaces(obs, act, {4}, 1);
  dqn_config c;
  c.epsilon_base = 0.5;
  c.epsilon_alpha = 3;
  c.exploration_steps = 60;  // 10 batches of 6 rows explore with epsilon near 1
  const bool use_masks = GENERATE(true, false);
  CAPTURE(use_masks);
  c.action_masks = use_masks;
  // 2 envs of 3 agent slots each.
  q_policy p(spec, 6, 1, c, 0, 3);
  CHECK(p.schedule().rows() == 2);
  // Action 2 is the best everywhere (only the last bias is non-zero).
  std::vector<float> w(2 * 4 + 4 + 4 * 3 + 3, 0.0f);
  w.back() = 1.0f;
  p.load_weights(w);
  coral::envs::env_batch batch(6, obs, act);
  batch.declare_action_masks();
  // Row 0 may not take 2, row 1 only 1; rows 2 and 4 hold no agent.
  const std::uint8_t masks[6][3] = {{1, 1, 0}, {0, 1, 0}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 1}};
  for (std::size_t r = 0; r < 6; ++r) std::copy_n(masks[r], 3, batch.action_masks().row(r).begin());
  auto active = batch.active();
  std::fill(active.begin(), active.end(), std::uint8_t{1});
  active[2] = active[4] = 0;
  std::vector<actors::row_range> ranges{{0, 6}};
  std::vector<float> values(6, -7.0f);
  std::size_t taken[6][3] = {};
  for (int i = 0; i < 200; ++i) {
    batch.discrete_actions().row(2)[0] = 9;  // what an inactive row holds stays
    batch.discrete_actions().row(4)[0] = 9;
    p.act({.batch = batch, .ranges = ranges, .log_probs = {}, .values = values});
    for (std::size_t r = 0; r < 6; ++r) {
      const auto a = batch.discrete_actions().row(r)[0];
      if (r == 2 || r == 4) {
        CHECK(a == 9);
        continue;
      }
      REQUIRE((a >= 0 && a < 3));
      ++taken[r][a];
    }
  }
  CHECK(values[2] == -7.0f);  // nor is its value written
  CHECK(values[4] == -7.0f);
  // Rows of one env share its rung; every row's step counts.
  CHECK(p.epsilon(0) == p.epsilon(2));
  CHECK(p.epsilon(3) == p.epsilon(5));
  CHECK(p.epsilon(0) == Approx(0.5));
  CHECK(p.epsilon(3) == Approx(std::pow(0.5, 4)));
  if (use_masks) {
    CHECK(taken[0][2] == 0);  // the best action, masked: neither explored nor chosen
    CHECK(taken[0][0] > 0);   // explored among the legal ones
    CHECK(taken[0][1] > 0);
    CHECK(taken[1][1] == 200);
    CHECK(taken[5][2] == 200);
    CHECK(values[0] == Approx(0.0f));  // the best legal value, not action 2's
  } else {
    CHECK(taken[0][2] > 100);  // the masks are ignored: action 2 is the best
    CHECK(taken[1][0] + taken[1][2] > 0);
    CHECK(values[0] == Approx(1.0f));
  }
}

TEST_CASE("bad DQN flags are rejected naming the flag", "[learners][dqn]") {
  auto check = [](auto change, std::string_view flag) {
    auto o = small_dqn(1000);
    change(o);
    const auto text = coral::test::refusal(o);
    CAPTURE(text);
    CHECK(text.find(flag) != std::string::npos);
  };
  check([](train_options& o) { options_of<dqn_config>(o).replay_ratio = 0; }, "--replay-ratio");
  check([](train_options& o) { options_of<dqn_config>(o).n_step = 0; }, "--n-step");
  check([](train_options& o) { options_of<dqn_config>(o).batch_size = 0; }, "--replay-batch");
  check([](train_options& o) { options_of<dqn_config>(o).prefetch = 0; }, "--prefetch");
  check([](train_options& o) { options_of<dqn_config>(o).priority_alpha = 2; }, "--priority-alpha");
  check([](train_options& o) { options_of<dqn_config>(o).target_update = 0; }, "--target-update");
  check([](train_options& o) { options_of<dqn_config>(o).epsilon_base = 1.5; }, "--epsilon-base");
  check([](train_options& o) { options_of<dqn_config>(o).replay_capacity = 16; }, "--replay-capacity");
  check([](train_options& o) { options_of<dqn_config>(o).huber_delta = 0; }, "--huber-delta");
  check([](train_options& o) { options_of<dqn_config>(o).learning_rate = 1e7; }, "--learning-rate");
}

TEST_CASE("a Q-network policy refuses stacked frames", "[learners][dqn][errors]") {
  const auto obs = coral::envs::space::box({2}, -1, 1);
  const auto act = coral::envs::space::discrete(3);
  const auto spec = network_spec::from_spaces(obs, act, {4}, 2);
  CHECK_THROWS_MATCHES(q_policy(spec, 2, 1, dqn_config{}), coral::config_error,
                       Catch::Message(fmt::format(fmt::runtime(lm::dqn_no_frames), 2)));
}

TEST_CASE("DQN settings under which the learner could never train are refused before start, saying why",
          "[learners][dqn]") {
  auto refused = [](std::string_view flag, auto value, const std::string& requirement) {
    return fmt::format(fmt::runtime(coral::actors::errors::flag_out_of_range), flag, value, requirement);
  };
  auto o = small_dqn(1000);  // ratio 4, batch 32, prefetch 4, learning starts 500, capacity 4096
  REQUIRE(coral::test::refusal(o) == "(accepted)");

  auto late = o;
  options_of<dqn_config>(late).learning_starts = 1000;
  CHECK(coral::test::refusal(late) ==
        refused("--learning-starts", 1000, fmt::format(fmt::runtime(lm::dqn_starts_too_late), 1000)));

  auto huge_batch = o;
  options_of<dqn_config>(huge_batch).batch_size = 1'000'000;
  CHECK(coral::test::refusal(huge_batch) ==
        refused("--replay-batch", 1'000'000, fmt::format(fmt::runtime(lm::dqn_batch_over_capacity), 4096)));

  // 4 x (1000 - 500) = 2000 transitions sampled over the whole run.
  auto starved = o;
  options_of<dqn_config>(starved).batch_size = 4000;
  options_of<dqn_config>(starved).replay_capacity = 8192;
  CHECK(coral::test::refusal(starved) ==
        refused("--replay-batch", 4000, fmt::format(fmt::runtime(lm::dqn_batch_over_grant), 2000, 4, 1000, 500)));

  auto deep = o;
  options_of<dqn_config>(deep).prefetch = 100'000;
  CHECK(coral::test::refusal(deep) ==
        refused("--prefetch", 100'000,
                fmt::format(fmt::runtime(lm::dqn_prefetch_over_capacity), 32, 3'200'000, 4096)));

  auto hungry = o;
  options_of<dqn_config>(hungry).prefetch = 100;  // 3200 in flight: within the replay, beyond the 2000 granted
  CHECK(coral::test::refusal(hungry) ==
        refused("--prefetch", 100,
                fmt::format(fmt::runtime(lm::dqn_prefetch_over_grant), 32, 3200, 2000, 4, 1000, 500)));

  // The defaults of coral train are far inside every bound.
  train_options defaults;
  defaults.algo = "dqn";
  CHECK(coral::test::refusal(defaults) == "(accepted)");
}

TEST_CASE("DQN refuses an action space that is not one Discrete", "[learners][dqn]") {
  coral::test::register_test_envs();
  auto o = small_dqn(1000);
  o.sampler.env = "test-target";
  std::ostringstream progress;
  try {
    (void)train(o, progress);
    FAIL("accepted a Box action space");
  } catch (const coral::config_error& e) {
    CHECK(std::string(e.what()) == fmt::format(fmt::runtime(lm::dqn_needs_discrete),
                                                  coral::envs::space::box({1}, -2.0f, 2.0f).to_string()));
  }
}

TEST_CASE("coral train --algo dqn runs on every topology and executor, updating from the replay", "[learners][dqn]") {
  auto t = GENERATE(actors::topology::sync, actors::topology::double_buffer, actors::topology::pool);
  auto mode = GENERATE(executor_mode::single, executor_mode::threads);
  CAPTURE(actors::to_string(t), coral::to_string(mode));
  const auto r = run_small(t, mode, 3000);
  CHECK(r.env_steps >= 3000);
  CHECK(r.episodes > 0);
  // After 500 steps, 4 sampled transitions per step in batches of 32: an update per 8 steps.
  CHECK(r.updates >= (3000 - 500) / 8 - 8);
  CHECK(r.updates <= (3000 + 64) / 8);
}

TEST_CASE("two DQN runs of a seed under --executor single give identical results", "[learners][dqn]") {
  auto o = small_dqn(3000);
  std::ostringstream p1, p2;
  const auto a = train(o, p1);
  const auto b = train(o, p2);
  CHECK(coral::test::without_wall_time(a.to_json(o)) == coral::test::without_wall_time(b.to_json(o)));
  CHECK(a.updates > 0);
}

TEST_CASE("a DQN run resumed from its checkpoint continues with the same replay contents", "[learners][dqn]") {
  const auto dir = fresh_path("dqn-resume");
  auto o = small_dqn(3000);
  o.checkpoint_dir = dir.string();
  std::ostringstream first;
  const auto r1 = train(o, first);
  REQUIRE(!r1.checkpoint.empty());
  const auto c = read_checkpoint(r1.checkpoint);
  CHECK(c.algo == "dqn");
  REQUIRE(c.record("replay") != nullptr);
  CHECK_FALSE(c.record("replay")->empty());
  CHECK(c.floats("target_parameters").size() == c.learner.parameters.size());
  CHECK(c.learner.updates == r1.updates);

  // What the saved replay holds, as a fresh replay actor of the run's shape loads it.
  coral::replay::replay_actor_config rc;
  rc.buffer = {.capacity = 4096, .num_streams = 8, .obs_dim = 4, .discrete_action_dim = 1, .n_step = 3};
  rc.batch_size = 32;
  coral::replay::replay_actor saved(rc);
  saved.load(*c.record("replay"));
  const auto held = saved.buffer().size();
  CHECK(held > 2000);
  CHECK(saved.limiter().inserts() >= 2900);

  o.resume = true;
  o.total_steps = 5000;
  std::ostringstream second;
  const auto r2 = train(o, second);
  CHECK(second.str().find(fmt::format("{} transitions in replay", held)) != std::string::npos);
  CHECK(r2.env_steps >= 5000);
  CHECK(r2.updates > r1.updates);
  // Updates went on from where the limiter stood: no second warm-up of 500 steps.
  CHECK(r2.updates - r1.updates >= (5000 - r1.env_steps) / 8 - 8);

  // Another replay capacity is refused before anything starts, naming the
  // checkpoint and what differs; nothing is written.
  auto smaller = o;
  options_of<dqn_config>(smaller).replay_capacity = 2048;
  std::ostringstream refused_progress;
  try {
    (void)train(smaller, refused_progress);
    FAIL("resumed into a replay of another capacity");
  } catch (const coral::training::checkpoint_error& e) {
    CHECK(std::string(e.what()) ==
          fmt::format(fmt::runtime(te::checkpoint_replay_mismatch), r2.checkpoint,
                      fmt::format(fmt::runtime(coral::replay::errors::state_shape_mismatch), "capacity", 4096, 2048)));
  }
  CHECK(read_checkpoint(r2.checkpoint).learner.env_steps == r2.env_steps);

  // A PPO run refuses the DQN checkpoint (with DQN's settings at their
  // defaults: PPO refuses those first).
  auto p = o;
  p.algo = "ppo";
  p.algo_options.reset();
  std::ostringstream third;
  CHECK_THROWS_WITH(train(p, third), Catch::Contains("was written by --algo dqn"));
}

TEST_CASE("learning starts at any point, even before a transition is complete: the run does not stall",
          "[learners][dqn]") {
  // learning_starts 0 once stopped at 6 env steps for ever: the rate limiter
  // let the learner sample before the replay held a sampleable transition
  // and the feeder wait until it had.
  auto starts = GENERATE(0, 1, 8, 32);
  auto t = GENERATE(actors::topology::sync, actors::topology::pool);
  auto mode = GENERATE(executor_mode::single, executor_mode::threads);
  CAPTURE(starts, actors::to_string(t), coral::to_string(mode));
  coral::test::watchdog dog("dqn run with a small learning start", std::chrono::seconds(60));
  const auto r = run_small(t, mode, 1500, static_cast<std::uint64_t>(starts));
  CHECK(r.env_steps >= 1500);
  CHECK(r.updates > 100);
}

TEST_CASE("periodic DQN checkpoints taken while the run goes on hold the replay, and a run resumes from one",
          "[learners][dqn][checkpoint]") {
  // Periodic checkpoints once freed the checkpoint under the replay actor
  // (a lambda built inside a co_await expression, destroyed twice by GCC 12)
  // and failed with std::bad_alloc or a double free.
  auto mode = GENERATE(executor_mode::threads, executor_mode::single);
  CAPTURE(coral::to_string(mode));
  const auto dir = fresh_path("dqn-periodic");
  auto o = small_dqn(4000);
  o.sampler.executor = mode;
  o.sampler.threads = 2;
  o.checkpoint_dir = dir.string();
  o.checkpoint_every = 1000;
  std::ostringstream first;
  const auto r1 = train(o, first);
  REQUIRE(r1.env_steps >= 4000);

  coral::replay::replay_actor_config rc;
  rc.buffer = {.capacity = 4096, .num_streams = 8, .obs_dim = 4, .discrete_action_dim = 1, .n_step = 3};
  rc.batch_size = 32;
  std::vector<checkpoint> periodic;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".ckpt") continue;
    auto c = read_checkpoint(entry.path());
    if (c.learner.env_steps < r1.env_steps) periodic.push_back(std::move(c));
  }
  REQUIRE(!periodic.empty());
  std::ranges::sort(periodic, {}, [](const checkpoint& c) { return c.learner.env_steps; });
  std::uint64_t inserts = 0;
  for (const auto& c : periodic) {
    CAPTURE(c.learner.env_steps);
    CHECK(c.algo == "dqn");
    CHECK(c.learner.env_steps >= 1000);
    CHECK(c.learner.updates > 0);
    CHECK(c.floats("target_parameters").size() == c.learner.parameters.size());
    coral::replay::replay_actor saved(rc);
    saved.load(*c.record("replay"));
    // The replay copy was taken just after the learner's state: it has
    // served every batch the learner trained on, and later copies saw more.
    CHECK(saved.buffer().size() > 0);
    CHECK(saved.limiter().samples() >= c.learner.updates * 32);
    CHECK(saved.limiter().inserts() >= inserts);
    CHECK(saved.limiter().inserts() <= r1.env_steps);
    inserts = saved.limiter().inserts();
  }

  // Resume from the earliest periodic checkpoint alone.
  const auto& from = periodic.front();
  const auto resume_dir = fresh_path("dqn-periodic-resume");
  fs::create_directories(resume_dir);
  write_checkpoint(checkpoint_path(resume_dir, from.learner.env_steps), from);
  coral::replay::replay_actor saved(rc);
  saved.load(*from.record("replay"));
  auto again = o;
  again.checkpoint_dir = resume_dir.string();
  again.checkpoint_every = 0;
  again.resume = true;
  std::ostringstream second;
  const auto r2 = train(again, second);
  CHECK(second.str().find(fmt::format("({} env steps, {} updates, {} transitions in replay)", from.learner.env_steps,
                                      from.learner.updates, saved.buffer().size())) != std::string::npos);
  CHECK(r2.env_steps >= 4000);
  CHECK(r2.updates > from.learner.updates);
}
