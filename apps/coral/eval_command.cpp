// `coral eval`: a checkpoint's policy on fresh episodes of its env, one line
// per episode and a JSON summary (docs/cli.md). Torch-free: it acts with
// the installed API (coral/learners/trained_policy.hpp), so its returns are
// those a program using that API gets.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "coral/cli.hpp"
#include "coral/core/interrupts.hpp"
#include "coral/core/json.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"
#include "coral/errors.hpp"
#include "coral/flag_checks.hpp"
#include "coral/learners/trained_policy.hpp"
#include "coral/training/checkpoint.hpp"
#include "coral/training/video_writer.hpp"
#include "coral/video_flag.hpp"

namespace coral::cli {
namespace {

struct eval_flags {
  std::string checkpoint;
  std::uint64_t episodes = 10;
  bool deterministic = false;
  std::uint64_t seed = 0;
  const CLI::Option* seed_flag = nullptr;
  std::vector<std::string> env_args;
  std::string video;  // empty: none
  int video_fps = 30;
};

struct episode_result {
  double ret = 0;
  std::int64_t length = 0;
};

/// The summary line: one JSON object.
std::string summary(const std::vector<episode_result>& done, const learners::trained_policy& p, std::uint64_t seed,
                    bool interrupted) {
  const auto n = static_cast<double>(done.size());
  double mean = 0, length = 0;
  double low = std::numeric_limits<double>::quiet_NaN(), high = low;  // null without an episode
  for (const auto& e : done) {
    mean += e.ret / n;
    length += static_cast<double>(e.length) / n;
    low = std::isnan(low) ? e.ret : std::min(low, e.ret);
    high = std::isnan(high) ? e.ret : std::max(high, e.ret);
  }
  double var = 0;
  for (const auto& e : done) var += (e.ret - mean) * (e.ret - mean) / n;
  if (done.empty()) mean = length = var = std::numeric_limits<double>::quiet_NaN();
  const auto& o = p.run_options();
  return fmt::format(
      R"({{"episodes":{},"mean_return":{},"std_return":{},"min_return":{},"max_return":{},"mean_length":{},)"
      R"("checkpoint":{},"env_steps_trained":{},"env":{},"algo":{},"seed":{},"deterministic":{},"interrupted":{}}})",
      done.size(), json::number(mean), json::number(std::sqrt(var)), json::number(low), json::number(high),
      json::number(length), json::quote(p.file().string()), p.env_steps(), json::quote(o.sampler.env),
      json::quote(o.algo), seed, p.deterministic() ? "true" : "false", interrupted ? "true" : "false");
}

void run_eval(std::ostream& out, const eval_flags& f) {
  // A video path that cannot be written, or no ffmpeg, is refused before the checkpoint is read.
  std::optional<training::video_writer> video;
  if (!f.video.empty()) open_video(video, f.video, f.video_fps);
  learners::policy_options po;
  po.deterministic = f.deterministic;
  po.env_args = envs::parse_env_args(f.env_args);
  if (f.seed_flag->count() > 0) po.seed = f.seed;
  // Every refusal comes before an env steps; a checkpoint that cannot be
  // used is bad input here, as a bad flag is (exit_code::rejected).
  auto policy = [&] {
    try {
      return learners::load_policy(f.checkpoint, po);
    } catch (const training::checkpoint_error& e) {
      throw config_error(e.what());
    }
  }();
  const auto& o = policy.run_options();
  const std::uint64_t seed = policy.seed();
  std::vector<std::unique_ptr<envs::env>> one;
  one.push_back(envs::registry::global().make(o.sampler.env, o.sampler.env_args, seed, 0));
  if (one.front()->max_agents() != 1) {
    throw config_error(fmt::format(fmt::runtime(errors::eval_multi_agent), o.sampler.env, one.front()->max_agents()));
  }
  envs::env_batch batch(1, one.front()->observation_space(), one.front()->action_space());
  envs::env_slice slice(batch, 0, std::move(one));
  std::vector<episode_result> done;
  done.reserve(f.episodes);
  std::int64_t step = 0;
  auto env_failed = [&](const envs::env_failed& e) {
    return error(fmt::format(fmt::runtime(errors::eval_env_failed), o.sampler.env, done.size() + 1, step, e.what()));
  };
  try {
    slice.reset_all();
  } catch (const envs::env_failed& e) {
    throw env_failed(e);
  }
  // The first episode is filmed: a frame of each state an action is chosen
  // in, so as many frames as the episode has steps.
  envs::rgb_frame frame;
  if (video) first_frame(slice.at(0), o.sampler.env, frame);  // an env that does not render is refused here
  out << fmt::format("evaluating {} ({} {}, trained {} env steps) for {} episodes, seed {}, {}{}\n",
                     policy.file().string(), o.algo, o.sampler.env, policy.env_steps(), f.episodes, seed,
                     f.deterministic ? "deterministic" : "sampled actions",
                     video ? fmt::format(", episode 1 filmed to {}", video->path().string()) : std::string())
      << std::flush;
  auto end_video = [&] {
    if (!video) return;
    const auto frames = video->frames();
    if (frames > 0) {
      video->finish();
      out << fmt::format("video: {} ({} frames)\n", video->path().string(), frames) << std::flush;
    }
    video.reset();  // no frames (stopped at once): nothing written
  };
  // A first SIGINT/SIGTERM ends the evaluation after the step in progress,
  // with the episodes done so far (and the video of the first, as far as it
  // got) and the summary; a second ends the process.
  interrupt_scope interrupts([] {});
  try {
    while (done.size() < f.episodes && !interrupted()) {
      if (video) {
        if (step > 0 && !slice.at(0).render(frame)) {
          throw error(fmt::format(fmt::runtime(errors::env_does_not_render), o.sampler.env));
        }
        video->write(frame);
      }
      // The env's mask, where it masks: a masked action is never taken.
      const auto a = policy.act(batch.observations().row(0),
                                batch.has_action_masks() ? std::as_const(batch).action_masks().row(0)
                                                         : std::span<const std::uint8_t>());
      std::copy(a.discrete.begin(), a.discrete.end(), batch.discrete_actions().row(0).begin());
      std::copy(a.continuous.begin(), a.continuous.end(), batch.continuous_actions().row(0).begin());
      ++step;
      slice.step_all();
      if (batch.terminated()[0] != 0 || batch.truncated()[0] != 0) {
        done.push_back({batch.episode_returns()[0], batch.episode_lengths()[0]});
        out << fmt::format("episode {}: return {} length {}\n", done.size(), json::number(done.back().ret),
                           done.back().length)
            << std::flush;
        end_video();
        policy.reset(0);  // the observation in the row starts the next episode
        step = 0;
      }
    }
  } catch (const envs::env_failed& e) {
    throw env_failed(e);
  }
  end_video();
  out << summary(done, policy, seed, interrupted()) << '\n' << std::flush;
}

}  // namespace

void add_eval_command(CLI::App& app, std::ostream& out) {
  auto f = std::make_shared<eval_flags>();
  auto* cmd = app.add_subcommand(
      "eval", "run a checkpoint's policy for some episodes: one line per episode, then one JSON object");
  cmd->add_option("--checkpoint", f->checkpoint,
                  "a checkpoint file, or a --checkpoint-dir (its newest checkpoint, as --resume picks it)")
      ->required()
      ->check(non_empty("a checkpoint file or directory"));
  cmd->add_option("--episodes", f->episodes, "episodes to run")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            std::uint64_t n = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
            if (ec == std::errc() && end == text.data() + text.size() && (n == 0 || n > max_eval_episodes)) {
              return fmt::format(fmt::runtime(errors::episodes_out_of_range), text, max_eval_episodes);
            }
            return {};  // other texts: the checks every whole-number flag has
          },
          "", "episode count"))
      ->capture_default_str();
  cmd->add_flag("--deterministic", f->deterministic,
                "the most probable action (PPO: the argmax, the Gaussian's mean; DQN, R2D2: greedy) instead of a "
                "sample (PPO) or epsilon-greedy with epsilon 0.05 (DQN, R2D2)");
  f->seed_flag = cmd->add_option("--seed", f->seed, "seed of the env (env index 0) and of sampled actions (default: "
                                                    "the run's seed)");
  cmd->add_option("--env-arg", f->env_args,
                  "set an env config key: key=value (repeatable), over the run's env args kept in the checkpoint")
      ->allow_extra_args(false);
  add_video_flags(*cmd, f->video, f->video_fps,
                  "film the first episode into this video file (.mp4 or .gif, encoded by ffmpeg): one frame per step, "
                  "the state each action is chosen in; envs that render: docs/envs.md");
  cmd->callback([&out, f] { run_eval(out, *f); });
}

}  // namespace coral::cli
