// The recurrent agents (issue 12) with their checked-in configs, on the
// built `coral`: R2D2 and recurrent PPO on the memory envs and cartpole. All
// are tagged [learning] (ctest label `learning`); CI runs those tagged [ci]
// as well, one seed each. BENCHMARKS.md ("Recurrent agents") has the seeds,
// steps and wall times of every config.

#include <string>

#include <catch2/catch.hpp>

#include "config_runs.hpp"

using coral::test::json_number;
using coral::test::train_with_config;

namespace {

/// `config` with seed 1 is solved (the env's solved return, or the config's
/// target) within `steps` env steps, in one of `tries` runs. A seed's run
/// is not repeatable: the learner and the sampler run on threads of their
/// own, and which batch the learner has reached when an episode ends moves
/// with the machine's load; a config with too little margin for that gets
/// more than one run.
void solves(const std::string& config, double steps, std::chrono::minutes limit, int tries = 1) {
  for (int t = 1; t <= tries; ++t) {
    const auto out = train_with_config(config, {"--seed", "1"}, limit);
    REQUIRE_FALSE(out.killed);
    REQUIRE(out.exit_code == 0);
    const bool solved = out.out.find("\"solved\":true") != std::string::npos;
    if ((solved && json_number(out.out, "env_steps") <= steps) || t == tries) {
      CHECK(solved);
      CHECK(json_number(out.out, "env_steps") <= steps);
      return;
    }
    WARN("run " << t << " of " << tries << " did not solve within " << steps << " steps; running it again");
  }
}

}  // namespace

// Seeds 1-8 solved it within 107,000-188,000 steps (configs/cartpole-r2d2.toml).
TEST_CASE("R2D2 solves cartpole within 300,000 env steps", "[learning][ci][r2d2][cartpole]") {
  solves("cartpole-r2d2", 300'000, std::chrono::minutes(10));
}

TEST_CASE("recurrent PPO solves memory with 4 bits and a delay of 16", "[learning][ci][ppo][memory]") {
  solves("memory-ppo-lstm", 3'000'000, std::chrono::minutes(15));
}

TEST_CASE("a frame-stacked MLP does not solve memory with a delay of 16 (the control)", "[learning][ppo][memory]") {
  const auto out = train_with_config("memory-ppo-frames", {"--seed", "1"},
                                     std::chrono::minutes(10));
  REQUIRE_FALSE(out.killed);
  REQUIRE(out.exit_code == 0);
  CHECK(out.out.find("\"solved\":false") != std::string::npos);
  CHECK(json_number(out.out, "mean_return") < 0.8);
}

TEST_CASE("R2D2 solves memory with 4 bits and a delay of 16", "[learning][r2d2][memory]") {
  solves("memory-r2d2", 3'000'000, std::chrono::minutes(40));
}

TEST_CASE("recurrent PPO reaches 450 on positions-only cartpole within 1M env steps", "[learning][ppo][positions]") {
  solves("cartpole-positions-ppo-lstm", 1'000'000, std::chrono::minutes(15));
}

TEST_CASE("R2D2 reaches 450 on positions-only cartpole within 1M env steps", "[learning][r2d2][positions]") {
  solves("cartpole-positions-r2d2", 1'000'000, std::chrono::minutes(15));
}

TEST_CASE("recurrent PPO and R2D2 solve repeat_first", "[learning][repeat_first]") {
  solves("repeat_first-ppo-lstm", 2'000'000, std::chrono::minutes(15));
  solves("repeat_first-r2d2", 1'000'000, std::chrono::minutes(15));
}

TEST_CASE("recurrent PPO and R2D2 solve repeat_previous", "[learning][repeat_previous]") {
  solves("repeat_previous-ppo-lstm", 2'000'000, std::chrono::minutes(15));
  solves("repeat_previous-r2d2", 1'000'000, std::chrono::minutes(15));
}
