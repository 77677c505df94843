// `coral envs` and `coral envs rollout`.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/action_text.hpp"
#include "coral/core/error.hpp"
#include "coral/cli.hpp"
#include "coral/core/interrupts.hpp"
#include "coral/core/json.hpp"
#include "coral/errors.hpp"
#include "coral/envs/env_batch.hpp"
#include "coral/envs/env_slice.hpp"
#include "coral/envs/registry.hpp"
#include "coral/envs/rgb_frame.hpp"
#include "coral/training/video_writer.hpp"
#include "coral/video_flag.hpp"

namespace coral::cli {
namespace {

struct envs_options {
  std::string env;  // empty: every env
  std::vector<std::string> env_args;
  bool json = false;
};

struct rollout_options {
  std::string env;
  std::vector<std::string> env_args;
  std::uint64_t seed = 0;
  std::int64_t steps = 10;
  std::string actions;  // empty: random actions from the seed
  std::string video;    // empty: no video
  int video_fps = 30;
};

// The rng stream that picks actions when --actions is not given; env streams
// use indices from 0, so the last index never collides with one.
constexpr std::uint64_t action_stream = ~std::uint64_t{0};

std::string optional_number(const std::optional<double>& x) { return x ? json::number(*x) : "null"; }

std::string range_text(const envs::config_key& k) {
  if (k.min && k.max) return fmt::format(", in [{}, {}]", *k.min, *k.max);
  if (k.min) return fmt::format(", >= {}", *k.min);
  if (k.max) return fmt::format(", <= {}", *k.max);
  return "";
}

void describe_text(std::ostream& out, const envs::env_spec& spec, const envs::env& e, const envs::env_config& c) {
  out << fmt::format("{} - {}\n", spec.name, spec.description);
  out << fmt::format("  observation: {}\n", e.observation_space().to_string());
  out << fmt::format("  action:      {}\n", e.action_space().to_string());
  out << fmt::format("  agents:      {}\n", e.max_agents());
  if (e.optimal_return() || e.solved_return()) {
    out << fmt::format("  returns:     optimal {}, solved at {}\n", optional_number(e.optimal_return()),
                       optional_number(e.solved_return()));
  }
  out << "  config keys:\n";
  for (std::size_t i = 0; i < spec.keys.size(); ++i) {
    const auto& k = spec.keys[i];
    const std::string value = envs::to_string(c.values()[i].second);
    out << fmt::format("    {} ({}, default {}{}{}): {}\n", k.name, envs::to_string(k.type), k.default_value,
                       range_text(k), value == k.default_value ? "" : fmt::format(", set to {}", value),
                       k.description);
  }
}

void describe_json(std::ostream& out, const envs::env_spec& spec, const envs::env& e, const envs::env_config& c) {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < spec.keys.size(); ++i) {
    const auto& k = spec.keys[i];
    keys.push_back(fmt::format(
        R"({{"name":{},"type":{},"default":{},"value":{},"min":{},"max":{},"description":{}}})", json::quote(k.name),
        json::quote(envs::to_string(k.type)), json::quote(k.default_value),
        json::quote(envs::to_string(c.values()[i].second)), optional_number(k.min), optional_number(k.max),
        json::quote(k.description)));
  }
  out << fmt::format(
      R"({{"name":{},"description":{},"observation_space":{},"action_space":{},"obs_dim":{},)"
      R"("discrete_action_dim":{},"continuous_action_dim":{},"max_agents":{},"optimal_return":{},)"
      R"("solved_return":{},"config":[{}]}})"
      "\n",
      json::quote(spec.name), json::quote(spec.description), json::quote(e.observation_space().to_string()),
      json::quote(e.action_space().to_string()), e.observation_space().flat_size(),
      e.action_space().discrete_size(), e.action_space().continuous_size(), e.max_agents(),
      optional_number(e.optimal_return()), optional_number(e.solved_return()), fmt::join(keys, ","));
}

void list_envs(std::ostream& out, const envs_options& o) {
  const auto& r = envs::registry::global();
  const auto args = envs::parse_env_args(o.env_args);
  if (o.env.empty() && !args.empty()) {
    throw config_error(fmt::format(fmt::runtime(coral::errors::bad_value), "--env-arg", o.env_args.front(),
                                   "only together with --env"));
  }
  const std::vector<std::string> names = o.env.empty() ? r.names() : std::vector<std::string>{o.env};
  bool first = true;
  for (const auto& name : names) {
    const auto& spec = r.find(name);
    const auto config = r.make_config(name, args);
    const auto e = spec.factory(config, coral::env_seed{0, 0});
    if (o.json) {
      describe_json(out, spec, *e, config);
    } else {
      if (!first) out << '\n';
      describe_text(out, spec, *e, config);
    }
    first = false;
  }
}

// The JSON value of one field over the rows of a step: a scalar for a
// single-agent env, an array with one element per row otherwise.
template <class F>
std::string per_row(std::size_t rows, F&& element) {
  if (rows == 1) return element(0);
  std::vector<std::string> parts;
  for (std::size_t r = 0; r < rows; ++r) parts.push_back(element(r));
  return fmt::format("[{}]", fmt::join(parts, ","));
}

void rollout(std::ostream& out, const rollout_options& o) {
  const auto& r = envs::registry::global();
  const auto args = envs::parse_env_args(o.env_args);
  // A video path that cannot be written, or no ffmpeg, is refused before the env is built.
  std::optional<training::video_writer> video;
  if (!o.video.empty()) open_video(video, o.video, o.video_fps);
  std::vector<std::unique_ptr<envs::env>> made;
  made.push_back(r.make(o.env, args, o.seed, 0));
  const envs::space action_space = made.front()->action_space();
  const std::size_t rows = made.front()->max_agents();
  envs::env_batch batch(rows, made.front()->observation_space(), action_space);
  envs::env_slice slice(batch, 0, std::move(made));

  std::vector<step_actions> plan;
  if (!o.actions.empty()) plan = parse_actions(o.actions, action_space, rows);
  coral::rng action_rng(coral::env_seed{o.seed, action_stream});

  const bool pure_discrete = action_space.kind() == envs::space_kind::discrete;
  auto obs = [&](std::size_t row) { return json::array(batch.observations().row(row)); };
  auto flag = [](std::uint8_t x) { return std::string(x != 0 ? "true" : "false"); };
  const bool multi = rows > 1;

  try {
    slice.reset_all();
  } catch (const envs::env_failed& e) {
    throw error(fmt::format(fmt::runtime(cli::errors::rollout_env_failed), o.env, 0, e.what()));
  }
  // Frame t shows the state whose observation line t prints: the reset
  // state, then the state after each step (after an auto-reset, the new
  // episode's first), so steps + 1 frames.
  envs::rgb_frame frame;
  auto record = [&] {
    if (video && slice.at(0).render(frame)) video->write(frame);
  };
  if (video) {
    first_frame(slice.at(0), o.env, frame);
    video->write(frame);
  }
  out << fmt::format(R"({{"step":0,"observation":{}{}}})", per_row(rows, obs),
                     multi ? fmt::format(R"(,"active":{})", per_row(rows, [&](std::size_t row) {
                               return flag(batch.active()[row]);
                             }))
                           : std::string())
      << '\n';

  // A first SIGINT/SIGTERM ends the rollout after the step in progress, with
  // every line so far printed; a second one ends the process at once.
  interrupt_scope interrupts([] {});
  for (std::int64_t t = 1; t <= o.steps && !interrupted(); ++t) {
    if (plan.empty()) {
      for (std::size_t row = 0; row < rows; ++row) {
        envs::sample_action(action_space, action_rng, batch.discrete_actions().row(row),
                            batch.continuous_actions().row(row));
      }
    } else {
      const auto& step = plan[static_cast<std::size_t>(t - 1) % plan.size()];  // cycled
      std::copy(step.discrete.begin(), step.discrete.end(), batch.discrete_actions().data());
      std::copy(step.continuous.begin(), step.continuous.end(), batch.continuous_actions().data());
    }
    std::vector<std::uint8_t> acted(batch.active().begin(), batch.active().end());
    const std::string action = per_row(rows, [&](std::size_t row) {
      if (acted[row] == 0) return std::string("null");
      return pure_discrete ? fmt::format("{}", batch.discrete_actions()(row, 0))
                           : json::quote(format_action(action_space, batch.discrete_actions().row(row),
                                                       batch.continuous_actions().row(row)));
    });

    try {
      slice.step_all();
    } catch (const envs::env_failed& e) {
      throw error(fmt::format(fmt::runtime(cli::errors::rollout_env_failed), o.env, t, e.what()));
    }

    std::string line = fmt::format(
        R"({{"step":{},"action":{},"observation":{},"reward":{},"terminated":{},"truncated":{})", t, action,
        per_row(rows, obs), per_row(rows, [&](std::size_t row) { return json::number(batch.rewards()[row]); }),
        per_row(rows, [&](std::size_t row) { return flag(batch.terminated()[row]); }),
        per_row(rows, [&](std::size_t row) { return flag(batch.truncated()[row]); }));
    if (multi) {
      line += fmt::format(R"(,"active":{})", per_row(rows, [&](std::size_t row) { return flag(batch.active()[row]); }));
    }
    bool any_done = false;
    for (std::size_t row = 0; row < rows; ++row) any_done = any_done || batch.terminated()[row] || batch.truncated()[row];
    if (any_done) {
      auto ended = [&](std::size_t row) { return batch.terminated()[row] != 0 || batch.truncated()[row] != 0; };
      line += fmt::format(
          R"(,"final_observation":{},"episode_return":{},"episode_length":{})",
          per_row(rows, [&](std::size_t row) {
            return ended(row) ? json::array(batch.final_observations().row(row)) : std::string("null");
          }),
          per_row(rows, [&](std::size_t row) {
            return ended(row) ? json::number(batch.episode_returns()[row]) : std::string("null");
          }),
          per_row(rows, [&](std::size_t row) {
            return ended(row) ? fmt::format("{}", batch.episode_lengths()[row]) : std::string("null");
          }));
    }
    out << line << "}\n";
    record();
  }
  if (video) video->finish();
}

}  // namespace

void add_envs_command(CLI::App& app, std::ostream& out) {
  auto list = std::make_shared<envs_options>();
  CLI::App* envs_cmd = app.add_subcommand(
      "envs", "List registered envs with their spaces and config keys (defaults, or as set with --env-arg)");
  envs_cmd->add_option("--env", list->env, "show only this env");
  envs_cmd->add_option("--env-arg", list->env_args, "set an env config key: key=value (repeatable)")
      ->allow_extra_args(false);
  envs_cmd->add_flag("--json", list->json, "one JSON object per env and line");
  envs_cmd->require_subcommand(0, 1);

  auto roll = std::make_shared<rollout_options>();
  CLI::App* rollout_cmd = envs_cmd->add_subcommand(
      "rollout",
      "Step one env and print one JSON object per line: the reset observation (step 0), then per step the action, "
      "observation, reward, terminated and truncated, and on a step that ends an episode its final observation, "
      "return and length");
  rollout_cmd->add_option("--env", roll->env, "env name (see `coral envs`)")->required();
  rollout_cmd->add_option("--env-arg", roll->env_args, "set an env config key: key=value (repeatable)")
      ->allow_extra_args(false);
  rollout_cmd->add_option("--seed", roll->seed, "seed of the env (env index 0) and of random actions")
      ->capture_default_str();
  rollout_cmd->add_option("--steps", roll->steps, "number of steps")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{100'000'000}))
      ->capture_default_str();
  rollout_cmd->add_option(
      "--actions", roll->actions,
      "actions per step, comma-separated, cycled if fewer than --steps; a row's action lists its flat "
      "scalars in leaf order separated by ':' (Discrete '1', MultiDiscrete '2:0', Box '0.5:-1'); multi-agent "
      "envs take one action per row separated by '/' or one for all rows. Default: uniform random actions "
      "from the seed");
  add_video_flags(*rollout_cmd, roll->video, roll->video_fps,
                  "write the rollout's frames to this video file (.mp4 or .gif, encoded by ffmpeg): the reset frame, "
                  "then one per step (steps + 1 frames); envs that render: docs/envs.md");

  envs_cmd->callback([envs_cmd, list, &out] {
    if (envs_cmd->get_subcommands().empty()) list_envs(out, *list);
  });
  rollout_cmd->callback([roll, &out] { rollout(out, *roll); });
}

}  // namespace coral::cli
