// DQN learning tests: real training runs with the replay actor, tagged
// [learning] (their own ctest entry, label `learning`).

#include "coral/learners/train.hpp"

#include <iostream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

using namespace coral::learners;

namespace {

/// `coral train --algo dqn`'s defaults for `env` and `seed`, within `budget` env steps.
train_options dqn_defaults(const std::string& env, std::uint64_t seed, std::uint64_t budget) {
  train_options o;
  o.algo = "dqn";
  o.sampler.env = env;
  o.sampler.seed = seed;
  o.total_steps = budget;
  o.progress_seconds = 10;
  return o;
}

train_result run(const train_options& o) {
  std::ostringstream progress;
  const auto r = train(o, progress);
  std::cout << progress.str() << r.to_json(o) << '\n' << std::flush;
  return r;
}

}  // namespace

TEST_CASE("DQN with prioritized replay solves cartpole within 300k env steps for several seeds",
          "[learning][dqn][cartpole]") {
  auto seed = GENERATE(1, 2, 3);
  CAPTURE(seed);
  const auto r = run(dqn_defaults("cartpole", static_cast<std::uint64_t>(seed), 300'000));
  CHECK(r.solved);
  CHECK(r.mean_return >= 475);
  CHECK(r.env_steps <= 300'000);
}

TEST_CASE("DQN solves the bandit and password sanity envs", "[learning][dqn][sanity]") {
  auto env = GENERATE(as<std::string>{}, "bandit", "password");
  CAPTURE(env);
  const auto r = run(dqn_defaults(env, 1, 200'000));
  CHECK(r.solved);
  CHECK(r.mean_return >= 0.95);
}
