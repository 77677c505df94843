// The MinAtar configs (configs/minatar-<game>-<algo>.toml) on the built
// `coral`: the convolutional networks (PPO, DQN, and R2D2 with an LSTM)
// learn Breakout. Tagged [learning] (ctest label `learning`); CI runs the
// one tagged [ci]. The reference:
// MinAtar's DQN reaches about 10 on Breakout at 5M frames, its actor-critic
// about 17 (Young & Tian 2019; docs/envs.md); a random policy 0.5.

#include <string>

#include <catch2/catch.hpp>

#include "config_runs.hpp"

using coral::test::json_number;
using coral::test::train_with_config;

TEST_CASE("PPO with MinAtar's network beats MinAtar's DQN on Breakout within 1M env steps",
          "[learning][ci][ppo][minatar]") {
  const auto out = train_with_config("minatar-breakout-ppo", {"--seed", "1", "--total-steps", "1000000"},
                                     std::chrono::minutes(15));
  REQUIRE_FALSE(out.killed);
  REQUIRE(out.exit_code == 0);
  CHECK(json_number(out.out, "env_steps") == 1'000'000);
  CHECK(json_number(out.out, "mean_return") >= 10.0);
}

TEST_CASE("DQN with MinAtar's network reaches 10x the random return on Breakout within 300k env steps",
          "[learning][dqn][minatar]") {
  const auto out = train_with_config("minatar-breakout-dqn", {"--seed", "1", "--total-steps", "300000"},
                                     std::chrono::minutes(15));
  REQUIRE_FALSE(out.killed);
  REQUIRE(out.exit_code == 0);
  CHECK(json_number(out.out, "mean_return") >= 5.0);
}

TEST_CASE("R2D2 with a convolutional LSTM reaches 10x the random return on Breakout within 1M env steps",
          "[learning][r2d2][minatar]") {
  const auto out = train_with_config("minatar-breakout-r2d2",
                                     {"--seed", "1", "--total-steps", "1000000", "--target-return", "5.08",
                                      "--keep-going=false"},
                                     std::chrono::minutes(20));
  REQUIRE_FALSE(out.killed);
  REQUIRE(out.exit_code == 0);
  CHECK(json_number(out.out, "mean_return") >= 5.08);
  CHECK(json_number(out.out, "env_steps") <= 1'000'000);
}
