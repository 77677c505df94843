#include "coral/cli.hpp"

// `coral eval`: its lines, its summary, its refusals and its stop on SIGINT
// (docs/cli.md), on checkpoints of short real training runs.

#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "child_process.hpp"
#include "coral/core/json.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/errors.hpp"
#include "coral/envs/registry.hpp"
#include "coral/errors.hpp"
#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/ppo.hpp"
#include "coral/learners/train.hpp"
#include "coral/learners/trained_policy.hpp"
#include "coral/training/checkpoint.hpp"
#include "coral/training/checkpoint_dir.hpp"
#include "coral/training/errors.hpp"
#include "../support/scratch_dir.hpp"
#include "../support/short_run.hpp"
#include "../support/video_probe.hpp"
#include "run_cli.hpp"

namespace fs = std::filesystem;
using coral::training::options_of;
using coral::training::train_options;
namespace cm = coral::cli::errors;
using coral::cli::exit_code::ok;
using coral::cli::exit_code::rejected;
using coral::test::last_line;

namespace {

/// A checkpoint directory of a short cartpole run of `algo` (made once per process).
fs::path trained(const std::string& algo) {
  const auto dir = fs::temp_directory_path() / fmt::format("coral-eval-{}-{}", algo, ::getpid());
  if (coral::training::newest_checkpoint(dir)) return dir;
  fs::remove_all(dir);
  auto o = coral::test::short_run(algo, dir, 2048);
  o.sampler.seed = 3;
  if (algo == "ppo") options_of<coral::learners::ppo_options>(o).horizon = 64;
  if (algo == "dqn") {
    options_of<coral::learners::dqn_config>(o).learning_starts = 500;
    options_of<coral::learners::dqn_config>(o).replay_capacity = 2048;
  }
  coral::test::train_quietly(o);
  return dir;
}

struct episode {
  double ret = 0;
  long length = 0;
  friend bool operator==(const episode&, const episode&) = default;
};

/// The episodes of `coral eval`'s lines.
std::vector<episode> episodes_in(const std::string& out) {
  std::vector<episode> found;
  const std::regex line(R"(episode (\d+): return (\S+) length (\d+))");
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it) {
    found.push_back({std::stod((*it)[2]), std::stol((*it)[3])});
  }
  return found;
}

/// `episodes` episodes of the policy a program loads with the API, on env
/// index 0 of `seed`, stepped as a run steps it.
std::vector<episode> with_the_api(const fs::path& checkpoint, std::uint64_t seed, std::size_t episodes,
                                  bool deterministic) {
  coral::learners::policy_options po;
  po.deterministic = deterministic;
  po.seed = seed;
  auto p = coral::learners::load_policy(checkpoint, po);
  std::vector<std::unique_ptr<coral::envs::env>> one;
  one.push_back(coral::envs::registry::global().make("cartpole", {}, seed, 0));
  coral::envs::env_batch b(1, one.front()->observation_space(), one.front()->action_space());
  coral::envs::env_slice slice(b, 0, std::move(one));
  slice.reset_all();
  std::vector<episode> done;
  while (done.size() < episodes) {
    const auto a = p.act(b.observations().row(0));
    b.discrete_actions()(0, 0) = a.discrete[0];
    slice.step_all();
    if (b.terminated()[0] != 0 || b.truncated()[0] != 0) {
      done.push_back({b.episode_returns()[0], b.episode_lengths()[0]});
      p.reset(0);
    }
  }
  return done;
}


/// Two agents with cartpole's spaces: a PPO cartpole network fits it, and
/// coral eval refuses it as multi-agent.
class pair_env final : public coral::envs::env {
 public:
  void reset(const coral::envs::env_rows&) override {}
  void step(const coral::envs::env_rows& rows) override {
    for (std::size_t i = 0; i < 2; ++i) rows.terminated(i) = 1;
  }
  [[nodiscard]] const coral::envs::space& observation_space() const noexcept override { return obs_; }
  [[nodiscard]] const coral::envs::space& action_space() const noexcept override { return act_; }
  [[nodiscard]] std::size_t max_agents() const noexcept override { return 2; }

 private:
  coral::envs::space obs_ = coral::envs::space::box({4}, -1.0f, 1.0f);
  coral::envs::space act_ = coral::envs::space::discrete(2);
};

/// `good` (a cartpole checkpoint) as one of env `env`, written to `file`.
fs::path as_env(const fs::path& good, const std::string& env, const fs::path& file) {
  auto c = coral::training::read_checkpoint(coral::learners::find_checkpoint(good));
  c.env = env;
  coral::training::write_checkpoint(file, c);
  return file;
}

}  // namespace

TEST_CASE("coral eval prints each episode and a JSON summary: the returns a program gets from the API, same seed",
          "[apps][eval]") {
  for (const std::string algo : {"ppo", "dqn"}) {
    for (const bool deterministic : {true, false}) {
      INFO(algo << (deterministic ? " deterministic" : " sampled"));
      const auto dir = trained(algo);
      std::vector<std::string> args{"eval", "--checkpoint", dir.string(), "--episodes", "5", "--seed", "7"};
      if (deterministic) args.push_back("--deterministic");
      std::string out, err;
      REQUIRE(coral::test::run_cli(args, out, err) == ok);
      INFO(out << err);
      const auto got = episodes_in(out);
      CHECK(got == with_the_api(dir, 7, 5, deterministic));
      double mean = 0;
      for (const auto& e : got) mean += e.ret / 5;
      const auto json = last_line(out);
      CHECK_THAT(json, Catch::StartsWith(R"({"episodes":5,"mean_return":)" + coral::json::number(mean) + ","));
      CHECK_THAT(json, Catch::Contains(fmt::format(R"("env":"cartpole","algo":"{}","seed":7,"deterministic":{},)"
                                                   R"("interrupted":false}})",
                                                   algo, deterministic)));
      CHECK_THAT(json, Catch::Contains(R"("checkpoint":")" + coral::learners::find_checkpoint(dir).string() + "\""));
    }
  }
}

TEST_CASE("coral eval refuses a bad checkpoint, episode count or env arg before anything runs, naming it",
          "[apps][eval]") {
  const auto good = trained("ppo");
  const auto dir = coral::test::fresh_dir("eval-refusals");
  auto refused = [](std::vector<std::string> args) {
    args.insert(args.begin(), "eval");
    std::string out, err;
    const int rc = coral::test::run_cli(args, out, err);
    CHECK(rc == rejected);
    CHECK(out.empty());
    return err;
  };
  auto error = [](std::string_view format, auto&&... args) {
    return "error: " + fmt::format(fmt::runtime(format), args...) + "\n";
  };
  CHECK(refused({"--checkpoint", good.string(), "--episodes", "0"}) ==
        error("--episodes: " + std::string(cm::episodes_out_of_range), 0, coral::cli::max_eval_episodes));
  CHECK(refused({"--checkpoint", good.string(), "--episodes", "1000001"}) ==
        error("--episodes: " + std::string(cm::episodes_out_of_range), 1000001, coral::cli::max_eval_episodes));
  fs::create_directories(dir / "empty");
  CHECK(refused({"--checkpoint", (dir / "empty").string()}) ==
        error(coral::learners::errors::no_checkpoint_in_dir, (dir / "empty").string()));
  std::ofstream(dir / "foreign.ckpt") << "not a checkpoint at all, but long enough to hold a checkpoint header";
  CHECK(refused({"--checkpoint", (dir / "foreign.ckpt").string()}) ==
        error(coral::training::errors::checkpoint_not_coral, (dir / "foreign.ckpt").string()));
  const auto bytes = coral::test::read_bytes(coral::learners::find_checkpoint(good));
  std::ofstream(dir / "cut.ckpt", std::ios::binary).write(bytes.data(), 100);
  CHECK_THAT(refused({"--checkpoint", (dir / "cut.ckpt").string()}),
             Catch::StartsWith(fmt::format("error: checkpoint '{}' is truncated", (dir / "cut.ckpt").string())));
  CHECK_THAT(refused({"--checkpoint", (dir / "missing").string()}),
             Catch::StartsWith(fmt::format("error: checkpoint '{}'", (dir / "missing").string())));
  CHECK_THAT(refused({"--checkpoint", good.string(), "--env-arg", "gravity=-3"}),
             Catch::StartsWith("error: env 'cartpole': unknown config key 'gravity'"));
  CHECK(refused({"--checkpoint", good.string(), "--env-arg", "max_steps=0"}).find("max_steps") != std::string::npos);

  auto& registry = coral::envs::registry::global();
  if (!registry.contains("test-pair")) {
    registry.add({.name = "test-pair",
                  .description = "test env: two agents with cartpole's spaces",
                  .keys = {},
                  .factory = [](const coral::envs::env_config&, coral::env_seed) -> std::unique_ptr<coral::envs::env> {
                    return std::make_unique<pair_env>();
                  }});
  }
  const auto pair = as_env(good, "test-pair", dir / "pair.ckpt");
  CHECK(refused({"--checkpoint", pair.string()}) == error(cm::eval_multi_agent, "test-pair", 2));
}

TEST_CASE("an env that fails during coral eval ends it naming the env, the episode and the step", "[apps][eval]") {
  const auto dir = coral::test::fresh_dir("eval-failure");
  // faulty is cartpole with faults: the cartpole network fits it.
  const auto file = as_env(trained("ppo"), "faulty", dir / "faulty.ckpt");
  std::string out, err;
  CHECK(coral::test::run_cli({"eval", "--checkpoint", file.string(), "--env-arg", "throw_step=3"}, out, err) ==
        coral::cli::exit_code::failed);
  CHECK(err == "error: " + fmt::format(fmt::runtime(cm::eval_env_failed), "faulty", 1, 3, "injected fault: step 3") + "\n");
}

TEST_CASE("SIGINT stops coral eval with the episodes done and the summary, exit 0", "[apps][eval][signals]") {
  const auto dir = trained("ppo");
  coral::test::invocation run;
  run.argv = {CORAL_BINARY, "eval", "--checkpoint", dir.string(), "--episodes", "1000000"};
  coral::test::child c(run, std::chrono::seconds(60));
  REQUIRE(c.wait_for_output("episode 2:"));
  c.signal(SIGINT);
  const auto end = c.finish();
  INFO(end.out << end.err);
  REQUIRE_FALSE(end.killed);
  CHECK(end.exit_code == ok);
  const auto json = last_line(end.out);
  CHECK_THAT(json, Catch::Contains("\"interrupted\":true"));
  CHECK(episodes_in(end.out).size() >= 2);
  CHECK_THAT(json, Catch::StartsWith(fmt::format(R"({{"episodes":{},)", episodes_in(end.out).size())));
}

TEST_CASE("coral eval --video films the first episode, one frame per step, and changes none of the episodes",
          "[apps][eval][video]") {
  const auto dir = coral::test::fresh_dir("eval-video");
  for (const std::string algo : {"ppo", "dqn"}) {
    INFO(algo);
    const auto checkpoint = trained(algo).string();
    const auto file = dir / (algo == "ppo" ? "first.mp4" : "first.gif");
    std::string plain, filmed, err;
    REQUIRE(coral::test::run_cli({"eval", "--checkpoint", checkpoint, "--episodes", "3", "--seed", "7"}, plain, err) ==
            ok);
    REQUIRE(coral::test::run_cli({"eval", "--checkpoint", checkpoint, "--episodes", "3", "--seed", "7", "--video",
                                  file.string(), "--video-fps", "20"},
                                 filmed, err) == ok);
    INFO(filmed << err);
    const auto episodes = episodes_in(filmed);
    REQUIRE(episodes.size() == 3);
    CHECK(episodes == episodes_in(plain));  // filming steps nothing and draws nothing
    CHECK(last_line(filmed) == last_line(plain));
    CHECK_THAT(filmed, Catch::Contains(fmt::format("episode 1 filmed to {}\n", file.string())));
    CHECK_THAT(filmed, Catch::Contains(fmt::format("episode 1: return {} length {}\nvideo: {} ({} frames)\n",
                                                   coral::json::number(episodes[0].ret), episodes[0].length,
                                                   file.string(), episodes[0].length)));
    const auto facts = coral::test::probe_video(file);
    REQUIRE(facts.read);
    CHECK(facts.codec == (algo == "ppo" ? "h264" : "gif"));
    CHECK(facts.frames == episodes[0].length);  // the states the actions were chosen in
    CHECK(facts.width == 600);
    CHECK(facts.height == 400);
  }
}

TEST_CASE("coral eval --video refuses, before anything runs, a path it cannot write, no ffmpeg and an env that does "
          "not render, naming the flag",
          "[apps][eval][video][errors]") {
  const auto good = trained("ppo").string();
  const auto faulty = as_env(trained("ppo"), "faulty", coral::test::fresh_dir("eval-video-faulty") / "f.ckpt").string();
  const auto dir = coral::test::fresh_dir("eval-video-refused");
  const auto no_ffmpeg = coral::test::fresh_dir("eval-video-no-ffmpeg");
  const auto lost = dir / "no" / "such" / "e.mp4";
  auto eval = [&](const std::string& checkpoint, const fs::path& video) {
    return coral::test::invocation{.argv = {CORAL_BINARY, "eval", "--checkpoint", checkpoint, "--video", video.string()}};
  };
  auto without_ffmpeg = eval(good, dir / "e.mp4");
  without_ffmpeg.extra_env = {"PATH=" + no_ffmpeg.string()};
  const auto ends = coral::test::run_children(
      {eval(good, lost), eval(good, dir / "e.webm"), without_ffmpeg, eval(faulty, dir / "f.mp4")}, 2, std::chrono::seconds(60));
  auto error = [](std::string_view format, auto&&... args) {
    return "error: " + fmt::format(fmt::runtime(format), args...) + "\n";
  };
  const std::vector<std::string> expected{
      error("--video: " + std::string(coral::training::errors::video_no_directory), lost.string(),
            (dir / "no" / "such").string()),
      error("--video: " + std::string(coral::training::errors::video_bad_extension), (dir / "e.webm").string()),
      error("--video: " + std::string(coral::training::errors::video_ffmpeg_not_found), (dir / "e.mp4").string()),
      error(cm::env_does_not_render, "faulty")};
  REQUIRE(ends.size() == expected.size());
  for (std::size_t i = 0; i < ends.size(); ++i) {
    INFO("case " << i << ": " << ends[i].out << ends[i].err);
    CHECK_FALSE(ends[i].killed);
    CHECK(ends[i].exit_code == rejected);
    CHECK(ends[i].out.empty());
    CHECK(ends[i].err == expected[i]);
  }
  CHECK(fs::is_empty(dir));  // no video, no partial file
}
