// Self-play: which rows the learner trains on, whom opponents play, the
// match against a reference opponent, refusals, and self-play runs in
// every topology and executor.

#include "coral/learners/self_play.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/scratch_dir.hpp"
#include "../support/turns_env.hpp"
#include "coral/core/error.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/ppo.hpp"
#include "coral/learners/train.hpp"
#include "coral/training/algorithm_descriptor.hpp"
#include "coral/training/checkpoint.hpp"

using namespace coral::learners;
namespace lm = coral::learners::errors;
namespace envs = coral::envs;
namespace actors = coral::actors;

namespace self_play_test {

/// A network of Box((3,)) observations and Discrete(3) actions with one
/// hidden layer of 2, every weight 0 but the actor's output bias: +40 for
/// action `favoured` (its probability 1 to float precision).
std::vector<float> favouring(const network_spec& spec, std::size_t favoured) {
  std::vector<float> w(parameter_count(spec), 0.0f);
  const std::size_t bias = 2 * 3 + 2 + 3 * 2;  // after the hidden layer's weights and bias, the head's weights
  w[bias + favoured] = 40.0f;
  return w;
}

network_spec small_spec() {
  network_spec spec;
  spec.raw_obs_dim = 3;
  spec.nvec = {3};
  spec.hidden = {2};
  return spec;
}

/// One step of a batch of two envs of two slots (teams 0 and 1), every row
/// active: which action each row got.
std::vector<std::int32_t> act_once(self_play_policy& policy, envs::env_batch& batch) {
  std::vector<float> log_probs(4), values(4);
  const actors::row_range all{0, 4};
  policy.act({.batch = batch, .ranges = std::span(&all, 1), .log_probs = log_probs, .values = values});
  std::vector<std::int32_t> out;
  for (std::size_t r = 0; r < 4; ++r) out.push_back(batch.discrete_actions().row(r)[0]);
  return out;
}

}  // namespace self_play_test

using namespace self_play_test;

TEST_CASE("self-play trains each env's learner team and has the others play the pool's snapshots",
          "[learners][self-play]") {
  const auto spec = small_spec();
  envs::env_batch batch(4, 3, 1, 0);
  const std::vector<std::int32_t> teams{0, 1, 0, 1};
  std::copy(teams.begin(), teams.end(), batch.teams().begin());
  snapshot_pool pool;
  std::vector<std::vector<float>> snapshots;
  add_snapshot(snapshots, favouring(spec, 1), 2);
  pool.publish(snapshots);
  SECTION("without mirror matches") {
    self_play_policy policy(spec, 4, 7, 2, 2, teams, pool, 0.0, true);
    policy.load_weights(favouring(spec, 0));  // the learner's weights
    // Env 0 trains team 0 (row 0), env 1 team 1 (row 3).
    CHECK(std::vector<std::uint8_t>(policy.learner_rows().begin(), policy.learner_rows().end()) ==
          std::vector<std::uint8_t>{1, 0, 0, 1});
    CHECK(act_once(policy, batch) == std::vector<std::int32_t>{0, 1, 1, 0});
    // A new snapshot: opponents mid-episode keep theirs; at their next
    // episode they draw from both.
    add_snapshot(snapshots, favouring(spec, 2), 2);
    pool.publish(snapshots);
    auto lengths = batch.episode_lengths();
    std::fill(lengths.begin(), lengths.end(), 3);
    for (int i = 0; i < 20; ++i) CHECK(act_once(policy, batch) == std::vector<std::int32_t>{0, 1, 1, 0});
    std::vector<int> seen(3, 0);
    for (int i = 0; i < 40; ++i) {
      batch.terminated()[1] = 1;  // row 1's episode starts over
      const auto a = act_once(policy, batch);
      ++seen[static_cast<std::size_t>(a[1])];
      CHECK(a[2] == 1);  // row 2 plays on with its snapshot
      CHECK(policy.learner_rows()[1] == 0);
    }
    CHECK(seen[0] == 0);  // never the learner
    CHECK(seen[1] > 0);
    CHECK(seen[2] > 0);
    // A third snapshot drops the oldest: the latest are kept.
    add_snapshot(snapshots, favouring(spec, 0), 2);
    CHECK(snapshots.size() == 2);
    CHECK(snapshots.back() == favouring(spec, 0));
    CHECK(snapshots.front() == favouring(spec, 2));
  }
  SECTION("every opponent a mirror match: the learner plays and trains on both sides") {
    self_play_policy policy(spec, 4, 7, 2, 2, teams, pool, 1.0, true);
    policy.load_weights(favouring(spec, 0));
    CHECK(act_once(policy, batch) == std::vector<std::int32_t>{0, 0, 0, 0});
    CHECK(std::vector<std::uint8_t>(policy.learner_rows().begin(), policy.learner_rows().end()) ==
          std::vector<std::uint8_t>{1, 1, 1, 1});
    CHECK(policy.snapshot_of(1) == self_play_policy::learner_draw);
  }
  SECTION("inactive rows get nothing") {
    self_play_policy policy(spec, 4, 7, 2, 2, teams, pool, 0.0, true);
    policy.load_weights(favouring(spec, 0));
    batch.active()[1] = 0;
    for (std::size_t r = 0; r < 4; ++r) batch.discrete_actions().row(r)[0] = 9;
    CHECK(act_once(policy, batch) == std::vector<std::int32_t>{0, 9, 1, 0});
  }
}

TEST_CASE("a match against the reference opponent scores every game from the side asked for",
          "[learners][self-play]") {
  const auto obs = envs::space::box({9}, -1.0f, 1.0f);
  const auto spec = network_spec::from_spaces(obs, envs::space::discrete(9), {8}, 1);
  const std::vector<float> zeros(parameter_count(spec), 0.0f);  // greedy: the first legal cell
  const auto args = reference_args({{"opponent", "none"}, {"side", "random"}}, "first");
  CHECK(args == envs::config_args{{"opponent", "reference"}, {"side", "first"}});
  // Perfect play never loses: the first-legal-cell player never wins.
  const auto first = play_reference(spec, zeros, "tictactoe", args, 30, 4);
  CHECK(first.games() == 30);
  CHECK(first.wins == 0);
  CHECK(first.losses > 0);
  const auto second = play_reference(spec, zeros, "tictactoe", reference_args({}, "second"), 20, 4);
  CHECK(second.games() == 20);
  CHECK(second.wins == 0);
  CHECK_THROWS_MATCHES(play_reference(spec, zeros, "tictactoe", args, 1, 4, 1), coral::error,
                       Catch::Message(fmt::format(fmt::runtime(lm::match_too_long), "tictactoe", 1)));
}

namespace self_play_test {

coral::training::train_options self_play_run(actors::topology topo, coral::executor_mode mode) {
  coral::test::turns_env::register_once();
  coral::training::train_options o;
  o.sampler.env = "test-turns";
  o.sampler.env_args = {{"teams", "2"}};
  o.sampler.num_envs = 4;
  o.sampler.topo = topo;
  o.sampler.executor = mode;
  o.sampler.threads = 2;
  o.sampler.seed = 3;
  auto& p = coral::training::options_of<ppo_options>(o);
  p.horizon = 16;
  p.ppo.minibatch_size = 16;
  p.self_play = true;
  p.self_play_refresh = 2;
  p.self_play_pool = 3;
  o.total_steps = 4 * 3 * 16 * 10;
  o.stop_when_solved = false;
  o.progress_seconds = 0;
  return o;
}

/// Keeps the metrics header and the last row a run reports.
struct metrics_rows {
  std::string header, last;
  void watch(coral::training::train_options& o) {
    o.on_metrics_row = [this](std::string_view h, std::string_view row) {
      header = h;
      last = row;
      return true;
    };
  }
};

}  // namespace self_play_test

TEST_CASE("self-play runs in every topology and executor, taking no masked action", "[learners][self-play]") {
  for (auto topo : {actors::topology::sync, actors::topology::double_buffer, actors::topology::pool}) {
    for (auto mode : {coral::executor_mode::single, coral::executor_mode::threads}) {
      INFO("topology " << actors::to_string(topo) << ", " << coral::to_string(mode));
      auto o = self_play_run(topo, mode);
      metrics_rows metrics;
      metrics.watch(o);
      const auto& header = metrics.header;
      std::ostringstream progress;
      coral::training::train_result r;
      REQUIRE_NOTHROW(r = train(o, progress));
      CHECK(r.updates >= 8);
      CHECK(header.find(",pool_win,pool_draw,pool_loss,") != std::string::npos);
      CHECK(header.find("ref_first_win") == std::string::npos);  // no match asked for
      CHECK(progress.str().find("pool W/D/L") != std::string::npos);
    }
  }
}

TEST_CASE("a self-play run reports its match against the reference opponent", "[learners][self-play]") {
  coral::training::train_options o;
  o.sampler.env = "tictactoe";
  o.sampler.num_envs = 4;
  o.sampler.topo = actors::topology::sync;
  o.sampler.executor = coral::executor_mode::single;
  auto& p = coral::training::options_of<ppo_options>(o);
  p.horizon = 32;
  p.self_play = true;
  p.self_play_refresh = 2;
  p.self_play_eval_games = 10;
  o.total_steps = 4 * 2 * 32 * 4;
  o.progress_seconds = 0;
  metrics_rows metrics;
  metrics.watch(o);
  const auto& header = metrics.header;
  const auto& last = metrics.last;
  std::ostringstream progress;
  REQUIRE_NOTHROW(train(o, progress));
  // The columns, and the last row's match: three fractions per side, adding up to 1.
  const auto names = header.substr(header.find("ref_first_win"));
  CHECK(names.rfind("ref_first_win,ref_first_draw,ref_first_loss,ref_second_win,ref_second_draw,ref_second_loss", 0) == 0);
  std::vector<double> cells;
  std::stringstream row(last);
  std::string cell;
  while (std::getline(row, cell, ',')) cells.push_back(std::stod(cell));
  const auto at = std::count(header.begin(), header.begin() + static_cast<std::ptrdiff_t>(header.find("ref_first_win")), ',');
  REQUIRE(cells.size() > static_cast<std::size_t>(at) + 5);
  for (std::size_t side = 0; side < 2; ++side) {
    double sum = 0;
    for (std::size_t k = 0; k < 3; ++k) sum += cells[static_cast<std::size_t>(at) + 3 * side + k];
    CHECK(sum == Approx(1.0));
  }
}

TEST_CASE("self-play on an env that cannot have it is refused before the run, naming the env",
          "[learners][self-play][errors]") {
  std::ostringstream progress;
  SECTION("one team") {
    auto o = self_play_run(actors::topology::sync, coral::executor_mode::single);
    o.sampler.env = "race";
    o.sampler.env_args.clear();
    CHECK_THROWS_MATCHES(train(o, progress), coral::config_error,
                         Catch::Message(fmt::format(fmt::runtime(lm::self_play_one_team), "race")));
  }
  SECTION("a match on an env without a reference opponent") {
    auto o = self_play_run(actors::topology::sync, coral::executor_mode::single);
    coral::training::options_of<ppo_options>(o).self_play_eval_games = 5;
    try {
      (void)train(o, progress);
      FAIL("the run was not refused");
    } catch (const coral::config_error& e) {
      const std::string what = e.what();
      const std::string head = fmt::format(fmt::runtime(lm::self_play_no_reference), "test-turns", "");
      CHECK(what.rfind(head.substr(0, head.size() - 2), 0) == 0);
      CHECK(what.find("opponent") != std::string::npos);  // the env's own refusal names the key
    }
  }
  SECTION("pool and refresh of 0") {
    auto o = self_play_run(actors::topology::sync, coral::executor_mode::single);
    coral::training::options_of<ppo_options>(o).self_play_pool = 0;
    CHECK_THROWS_AS(train(o, progress), coral::config_error);
    coral::training::options_of<ppo_options>(o).self_play_pool = 2;
    coral::training::options_of<ppo_options>(o).self_play_refresh = 0;
    CHECK_THROWS_AS(train(o, progress), coral::config_error);
  }
  SECTION("more match games than the learner's thread may play at a refresh") {
    auto o = self_play_run(actors::topology::sync, coral::executor_mode::single);
    coral::training::options_of<ppo_options>(o).self_play_eval_games = max_self_play_eval_games + 1;
    CHECK_THROWS_WITH(train(o, progress), Catch::Contains("--self-play-eval-games") &&
                                              Catch::Contains(std::to_string(max_self_play_eval_games)));
  }
  SECTION("a pool of snapshots that would not fit in memory") {
    auto o = self_play_run(actors::topology::sync, coral::executor_mode::single);
    o.hidden = {4096, 4096};  // 4096^2 + ... weights: 64 MiB a snapshot
    o.total_steps = 100'000'000;
    auto& p = coral::training::options_of<ppo_options>(o);
    p.self_play_refresh = 1;
    p.self_play_pool = 1'000'000;  // capped by the run's updates: still far past any machine's memory
    CHECK_THROWS_AS(train(o, progress), coral::config_error);
    CHECK_THROWS_WITH(train(o, progress), Catch::Contains("self-play pool"));
  }
}

namespace self_play_test {

/// The pool a checkpoint holds (record `self_play_pool`: the snapshot count
/// and width as two u64, then the snapshots, oldest first); empty without one.
std::vector<std::vector<float>> pool_of(const coral::training::checkpoint& c) {
  std::vector<std::vector<float>> pool;
  const auto* bytes = c.record("self_play_pool");
  if (bytes == nullptr) return pool;
  REQUIRE(bytes->size() >= 16);
  std::uint64_t count = 0, each = 0;
  std::memcpy(&count, bytes->data(), 8);
  std::memcpy(&each, bytes->data() + 8, 8);
  REQUIRE(bytes->size() == 16 + count * each * sizeof(float));
  for (std::uint64_t k = 0; k < count; ++k) {
    auto& w = pool.emplace_back(each);
    std::memcpy(w.data(), bytes->data() + 16 + k * each * sizeof(float), each * sizeof(float));
  }
  return pool;
}

/// `c` with its pool's snapshots cut to `each` weights (a pool of another network).
coral::training::checkpoint with_pool_width(coral::training::checkpoint c, std::uint64_t each) {
  const auto pool = pool_of(c);
  const std::uint64_t count = pool.size();
  std::vector<char> bytes(16 + count * each * sizeof(float));
  std::memcpy(bytes.data(), &count, 8);
  std::memcpy(bytes.data() + 8, &each, 8);
  for (std::uint64_t k = 0; k < count; ++k) {
    std::memcpy(bytes.data() + 16 + k * each * sizeof(float), pool[k].data(), each * sizeof(float));
  }
  c.set_record("self_play_pool", std::move(bytes));
  return c;
}

}  // namespace self_play_test

TEST_CASE("a self-play run's checkpoint keeps its pool: a resumed run goes on with it bit for bit, a checkpoint "
          "without one starts a pool anew, and one of another network is refused naming the file",
          "[learners][self-play][checkpoint]") {
  namespace tr = coral::training;
  const auto dir = coral::test::fresh_dir("self-play-resume");
  tr::train_options o;
  o.sampler.env = "tictactoe";
  o.sampler.num_envs = 4;
  o.sampler.topo = actors::topology::sync;
  o.sampler.executor = coral::executor_mode::single;
  auto& p = tr::options_of<ppo_options>(o);
  p.horizon = 32;
  p.self_play = true;
  p.self_play_pool = 3;
  p.self_play_refresh = 2;
  constexpr std::uint64_t per_update = 4 * 2 * 32;  // envs x slots x horizon
  o.total_steps = 8 * per_update;
  o.stop_when_solved = false;
  o.progress_seconds = 0;
  o.checkpoint_dir = dir.string();
  std::ostringstream first;
  const auto r1 = train(o, first);
  REQUIRE(r1.updates == 8);
  const auto c1 = tr::read_checkpoint(r1.checkpoint);
  // The initial weights, then updates 2, 4, 6 and 8 joined a pool of 3: the
  // newest, update 8's, is the learner's final weights.
  const auto pool1 = pool_of(c1);
  REQUIRE(pool1.size() == 3);
  CHECK(pool1.back() == c1.learner.parameters);
  CHECK(pool1[0] != pool1[1]);
  REQUIRE(c1.record("self_play_returns") != nullptr);
  CHECK_FALSE(c1.floats("self_play_returns").empty());

  // Resumed for two updates: update 10's snapshot pushes the oldest out,
  // and the two before it are the saved ones, bit for bit.
  o.resume = true;
  o.total_steps = 10 * per_update;
  std::ostringstream second;
  const auto r2 = train(o, second);
  CHECK(second.str().find("3 self-play snapshots") != std::string::npos);
  REQUIRE(r2.updates == 10);
  const auto c2 = tr::read_checkpoint(r2.checkpoint);
  const auto pool2 = pool_of(c2);
  REQUIRE(pool2.size() == 3);
  CHECK(pool2[0] == pool1[1]);
  CHECK(pool2[1] == pool1[2]);
  CHECK(pool2[2] == c2.learner.parameters);

  // A checkpoint without a pool (a run without --self-play, an older
  // format) still resumes: the pool starts from its weights.
  auto plain = c2;
  std::erase_if(plain.records, [](const auto& r) { return r.first.rfind("self_play_", 0) == 0; });
  tr::write_checkpoint(r2.checkpoint, plain);
  o.total_steps = 12 * per_update;
  std::ostringstream third;
  const auto r3 = train(o, third);
  CHECK(third.str().find("self-play snapshots") == std::string::npos);
  const auto c3 = tr::read_checkpoint(r3.checkpoint);
  const auto pool3 = pool_of(c3);
  REQUIRE(pool3.size() == 2);
  CHECK(pool3[0] == c2.learner.parameters);
  CHECK(pool3[1] == c3.learner.parameters);

  // A pool whose snapshots are not this network's is refused, naming the file.
  const auto weights = c3.learner.parameters.size();
  tr::write_checkpoint(r3.checkpoint, with_pool_width(c3, weights - 1));
  o.total_steps = 14 * per_update;
  const auto refusal = [&] {
    std::ostringstream fourth;
    try {
      (void)train(o, fourth);
    } catch (const tr::checkpoint_error& e) {
      return std::string(e.what());
    }
    FAIL("the checkpoint was not refused");
    return std::string();
  };
  CHECK_THAT(refusal(), Catch::Contains("checkpoint '" + r3.checkpoint + "'") &&
                            Catch::Contains(fmt::format(fmt::runtime(lm::self_play_pool_mismatch), 2, weights - 1,
                                                        weights)));
  // And a record cut short, refused before anything of it is read.
  auto cut = c3;
  auto record = *c3.record("self_play_pool");
  record.pop_back();
  const auto bytes = record.size();
  cut.set_record("self_play_pool", std::move(record));
  tr::write_checkpoint(r3.checkpoint, cut);
  CHECK_THAT(refusal(), Catch::Contains("checkpoint '" + r3.checkpoint + "'") &&
                            Catch::Contains(fmt::format(fmt::runtime(lm::self_play_pool_malformed), bytes, 2, weights)));
}
