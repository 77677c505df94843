#include "coral/cli.hpp"

#include <algorithm>
#include <sstream>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../support/scratch_dir.hpp"
#include "../support/video_probe.hpp"
#include "coral/action_text.hpp"
#include "coral/core/error.hpp"
#include "coral/envs/registry.hpp"
#include "coral/envs/space.hpp"
#include "coral/errors.hpp"
#include "coral/training/errors.hpp"

namespace {

struct result {
  int code;
  std::string out;
  std::string err;
};

result run(std::vector<std::string> args) {
  args.insert(args.begin(), "coral");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int code = coral::cli::run(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("coral envs lists every env with its spaces and config keys", "[apps][envs_command]") {
  const auto r = run({"envs"});
  REQUIRE(r.code == 0);
  for (const char* name : {"bandit", "cartpole", "delay", "faulty", "memory", "noop", "password", "race",
                           "repeat_first", "repeat_previous", "squared", "stochastic"}) {
    CHECK_THAT(r.out, Catch::Contains(std::string(name) + " - "));
  }
  CHECK_THAT(r.out, Catch::Contains("cartpole - balance a pole on a cart (Gymnasium CartPole-v1 dynamics)\n"
                                    "  observation: Box([-4.8, -inf, -0.41887903, -inf], [4.8, inf, 0.41887903, "
                                    "inf], (4,))\n"
                                    "  action:      Discrete(2)\n"
                                    "  agents:      1\n"
                                    "  returns:     optimal 500, solved at 475\n"
                                    "  config keys:\n"
                                    "    max_steps (int, default 500, >= 1): steps after which an episode is "
                                    "truncated\n"
                                    "    velocities (bool, default true): observe the velocities (false: positions "
                                    "only, x and theta; needs a memory)\n"));
  CHECK_THAT(r.out, Catch::Contains("    episode_length (int, default 1000, >= 1)"));
}

TEST_CASE("coral envs --env with --env-arg shows the spaces of that config", "[apps][envs_command]") {
  const auto r = run({"envs", "--env", "password", "--env-arg", "length=3", "--json"});
  REQUIRE(r.code == 0);
  REQUIRE(lines(r.out).size() == 1);
  CHECK_THAT(r.out, Catch::StartsWith(R"({"name":"password",)"));
  CHECK_THAT(r.out, Catch::Contains(R"x("observation_space":"Box(-1, 1, (3,))")x"));
  CHECK_THAT(r.out, Catch::Contains(R"("solved_return":0.95)"));
  CHECK_THAT(r.out, Catch::Contains(R"({"name":"length","type":"int","default":"5","value":"3","min":1,"max":63,)"));
}

TEST_CASE("an unknown config key or a bad value is an error naming the key", "[apps][envs_command][errors]") {
  auto r = run({"envs", "--env", "noop", "--env-arg", "length=3"});
  CHECK(r.code == 1);
  CHECK(r.err == "error: env 'noop': unknown config key 'length' (known: episode_length)\n");
  r = run({"envs", "rollout", "--env", "noop", "--env-arg", "episode_length=-5"});
  CHECK(r.code == 1);
  CHECK(r.err == "error: env 'noop': config key 'episode_length': invalid value '-5' (expected int >= 1)\n");
  r = run({"envs", "rollout", "--env", "noop", "--env-arg", "episode_length"});
  CHECK(r.code == 1);
  CHECK(r.err == "error: --env-arg: expected key=value, got 'episode_length'\n");
}

TEST_CASE("coral envs rollout prints one JSON object per step", "[apps][envs_command][rollout]") {
  const auto r = run({"envs", "rollout", "--env", "cartpole", "--seed", "3", "--steps", "4", "--actions", "1,0"});
  REQUIRE(r.code == 0);
  const auto l = lines(r.out);
  REQUIRE(l.size() == 5);
  CHECK_THAT(l[0], Catch::Matches(R"(\{"step":0,"observation":\[[-0-9.e,]+\]\})"));
  CHECK_THAT(l[1], Catch::Matches(
                       R"(\{"step":1,"action":1,"observation":\[[-0-9.e,]+\],"reward":1,"terminated":false,"truncated":false\})"));
  CHECK_THAT(l[2], Catch::StartsWith(R"({"step":2,"action":0,)"));
  CHECK_THAT(l[3], Catch::StartsWith(R"({"step":3,"action":1,)"));  // the actions are cycled
  // The same seed gives the same lines; another seed other ones.
  CHECK(run({"envs", "rollout", "--env", "cartpole", "--seed", "3", "--steps", "4", "--actions", "1,0"}).out == r.out);
  CHECK(run({"envs", "rollout", "--env", "cartpole", "--seed", "4", "--steps", "4", "--actions", "1,0"}).out != r.out);
}

TEST_CASE("coral envs rollout picks random actions from the seed when none are given", "[apps][envs_command][rollout]") {
  const auto a = run({"envs", "rollout", "--env", "bandit", "--seed", "9", "--steps", "20"});
  REQUIRE(a.code == 0);
  CHECK(lines(a.out).size() == 21);
  CHECK(run({"envs", "rollout", "--env", "bandit", "--seed", "9", "--steps", "20"}).out == a.out);
  CHECK(run({"envs", "rollout", "--env", "bandit", "--seed", "10", "--steps", "20"}).out != a.out);
  CHECK_THAT(a.out, Catch::Contains(R"("terminated":true,"truncated":false,"final_observation":[1],)"
                                    R"("episode_return":)"));
}

TEST_CASE("coral envs rollout shows final observation, return and length when an episode ends",
          "[apps][envs_command][rollout]") {
  const auto r = run({"envs", "rollout", "--env", "noop", "--env-arg", "episode_length=2", "--steps", "2"});
  REQUIRE(r.code == 0);
  const auto l = lines(r.out);
  REQUIRE(l.size() == 3);
  CHECK(l[2].find(R"("step":2,)") != std::string::npos);
  CHECK_THAT(l[2], Catch::EndsWith(R"("observation":[0,0,0,0],"reward":0,"terminated":false,"truncated":true,)"
                                   R"("final_observation":[2,0,0,0],"episode_return":0,"episode_length":2})"));
}

TEST_CASE("coral envs rollout prints per-row arrays and the mask for a multi-agent env",
          "[apps][envs_command][rollout]") {
  const auto r = run({"envs", "rollout", "--env", "race", "--env-arg", "agents=2", "--env-arg", "min_agents=2",
                      "--steps", "1", "--actions", "0/1"});
  REQUIRE(r.code == 0);
  const auto l = lines(r.out);
  REQUIRE(l.size() == 2);
  CHECK(l[0] == R"({"step":0,"observation":[[0,1],[0,-1]],"active":[true,true]})");
  CHECK(l[1] == R"({"step":1,"action":[0,1],"observation":[[0.125,1],[0.125,-1]],"reward":[0,0],)"
                R"("terminated":[false,false],"truncated":[false,false],"active":[true,true]})");
}

TEST_CASE("an unknown env or an action outside the action space is a clear error", "[apps][envs_command][errors]") {
  auto r = run({"envs", "rollout", "--env", "cartpol", "--steps", "2"});
  CHECK(r.code == 1);
  // Every registered name, sorted (tests in this binary register envs of their own).
  const auto known = coral::envs::registry::global().names();
  CHECK(r.err == fmt::format("error: unknown env 'cartpol' (known: {})\n", fmt::join(known, ", ")));
  for (const char* builtin : {"cartpole", "connect4", "cover", "minatar/breakout", "population", "tictactoe"}) {
    CHECK(std::find(known.begin(), known.end(), builtin) != known.end());
  }
#ifdef CORAL_WITH_MUJOCO
  CHECK(std::find(known.begin(), known.end(), "halfcheetah") != known.end());
#endif
  r = run({"envs", "rollout", "--env", "cartpole", "--steps", "2", "--actions", "0,2"});
  CHECK(r.code == 1);
  CHECK(r.err == "error: --actions: action '2' (number 2) is outside the action space Discrete(2)\n");
  r = run({"envs", "rollout", "--env", "cartpole", "--steps", "2", "--actions", "left"});
  CHECK(r.code == 1);
  CHECK(r.err == "error: --actions: action 'left' (number 1) is outside the action space Discrete(2)\n");
}

TEST_CASE("bad flags exit non-zero naming the flag", "[apps][envs_command][errors]") {
  auto r = run({"envs", "rollout", "--env", "cartpole", "--steps", "0"});
  CHECK(r.code != 0);
  CHECK_THAT(r.err, Catch::Contains("--steps"));
  r = run({"envs", "--bogus"});
  CHECK(r.code != 0);
  CHECK_THAT(r.err, Catch::Contains("--bogus"));
  r = run({"envs", "rollout", "--steps", "3"});
  CHECK(r.code != 0);
  CHECK_THAT(r.err, Catch::Contains("--env"));
  r = run({"--log-level", "loud", "envs"});
  CHECK(r.code != 0);
  CHECK_THAT(r.err, Catch::Contains("--log-level"));
}

TEST_CASE("a whole-number flag reads 010 as ten and 1e1 as ten, as docs/cli.md says, not as CLI11 would",
          "[apps][envs_command]") {
  // CLI11 alone reads 010 as octal 8 and refuses 1e1; the checks rewrite the
  // value before it converts. envs rollout prints a line per step and one first.
  const auto steps_of = [](const std::string& steps) {
    const auto r = run({"envs", "rollout", "--env", "cartpole", "--seed", "3", "--steps", steps});
    CAPTURE(steps, r.err);
    REQUIRE(r.code == 0);
    return lines(r.out).size() - 1;
  };
  CHECK(steps_of("10") == 10);
  CHECK(steps_of("010") == 10);
  CHECK(steps_of("1e1") == 10);
  CHECK(steps_of("+10") == 10);
  CHECK(steps_of("1.0e1") == 10);
  // A seed too: the same lines as seed 10.
  const auto seeded = [](const std::string& seed) {
    return run({"envs", "rollout", "--env", "cartpole", "--seed", seed, "--steps", "3"}).out;
  };
  CHECK(seeded("010") == seeded("10"));
  CHECK(seeded("1e1") == seeded("10"));
  CHECK(seeded("8") != seeded("10"));
  // A signed flag (INT) likewise.
  const auto r = run({"bench", "--env", "noop", "--steps", "1e3", "--min-batch-size", "2", "--batch-timeout-us", "1e2",
                      "--no-baseline", "--threads", "1", "--executor", "single"});
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("sampler:  1000 env steps"));
}

TEST_CASE("every subcommand has --help", "[apps][envs_command]") {
  auto r = run({"envs", "--help"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("--env-arg"));
  r = run({"envs", "rollout", "--help"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("--actions"));
  r = run({"--help"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("--config"));
}

TEST_CASE("action text covers MultiDiscrete, Box and composite spaces", "[apps][action_text]") {
  using coral::envs::space;
  const space s = space::tuple({space::discrete(3), space::box({2}, -1.0F, 1.0F), space::multi_discrete({2, 4})});
  const auto steps = coral::cli::parse_actions("2:0.5:-1:1:3,0:0:0:0:0", s, 1);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].discrete == std::vector<std::int32_t>{2, 1, 3});
  CHECK(steps[0].continuous == std::vector<float>{0.5F, -1.0F});
  CHECK(coral::cli::format_action(s, steps[0].discrete, steps[0].continuous) == "2:0.5:-1:1:3");
  CHECK_THROWS_MATCHES(coral::cli::parse_actions("2:1.5:0:0:0", s, 1), coral::config_error,
                       Catch::Message("--actions: action '2:1.5:0:0:0' (number 1) is outside the action space "
                                      "Tuple(Discrete(3), Box(-1, 1, (2,)), MultiDiscrete([2, 4]))"));
  CHECK_THROWS_AS(coral::cli::parse_actions("2:0.5", s, 1), coral::config_error);  // too few scalars
  const auto two_rows = coral::cli::parse_actions("1/0", space::discrete(2), 2);
  CHECK(two_rows[0].discrete == std::vector<std::int32_t>{1, 0});
  const auto broadcast = coral::cli::parse_actions("1", space::discrete(2), 3);
  CHECK(broadcast[0].discrete == std::vector<std::int32_t>{1, 1, 1});
}

TEST_CASE("coral envs rollout --video writes the reset frame and one frame per step", "[apps][envs_command][video]") {
  const auto dir = coral::test::fresh_dir("envs-rollout-video");
  const auto mp4 = dir / "cartpole.mp4";
  auto r = run({"envs", "rollout", "--env", "cartpole", "--seed", "3", "--steps", "40", "--video", mp4.string()});
  REQUIRE(r.code == 0);
  CHECK(lines(r.out).size() == 41);
  auto facts = coral::test::probe_video(mp4);
  REQUIRE(facts.read);
  CHECK(facts.codec == "h264");
  CHECK(facts.frames == 41);  // steps + 1
  CHECK(facts.width == 600);
  CHECK(facts.height == 400);

  // Breakout's random episodes last about 11 steps: auto-resets inside the clip.
  const auto gif = dir / "breakout.gif";
  r = run({"envs", "rollout", "--env", "minatar/breakout", "--steps", "30", "--video", gif.string(), "--video-fps",
           "10"});
  REQUIRE(r.code == 0);
  facts = coral::test::probe_video(gif);
  REQUIRE(facts.read);
  CHECK(facts.codec == "gif");
  CHECK(facts.frames == 31);
  CHECK(facts.width == 160);
  CHECK(facts.height == 160);
}

TEST_CASE("coral envs rollout --video refuses, before anything runs, an env that does not render or a path it "
          "cannot write", "[apps][envs_command][video][errors]") {
  const auto dir = coral::test::fresh_dir("envs-rollout-video-refused");
  auto r = run({"envs", "rollout", "--env", "bandit", "--steps", "3", "--video", (dir / "b.mp4").string()});
  CHECK(r.code == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "error: " + fmt::format(fmt::runtime(coral::cli::errors::env_does_not_render), "bandit") + "\n");
  CHECK(std::filesystem::is_empty(dir));

  const auto lost = dir / "no" / "such" / "c.mp4";
  r = run({"envs", "rollout", "--env", "cartpole", "--steps", "3", "--video", lost.string()});
  CHECK(r.code == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "error: --video: " +
                     fmt::format(fmt::runtime(coral::training::errors::video_no_directory), lost.string(),
                                 (dir / "no" / "such").string()) +
                     "\n");

  r = run({"envs", "rollout", "--env", "cartpole", "--steps", "3", "--video", (dir / "c.webm").string()});
  CHECK(r.code == 1);
  CHECK(r.err == "error: --video: " +
                     fmt::format(fmt::runtime(coral::training::errors::video_bad_extension),
                                 (dir / "c.webm").string()) +
                     "\n");
}
