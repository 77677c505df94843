// libFuzzer target: the TOML config (`coral --config FILE`).
//
// Input: the file's text. It goes through toml++ (toml::parse), then through
// load_config() into a CLI11 app with the shape of coral's: the top-level
// flags, `envs`, `envs rollout`, `bench` and `train`, with options of every
// kind coral declares (text, signed and unsigned integers, reals, flags,
// repeated values, lists, choices, ranges) and no callbacks, so nothing runs.
//
// A text must either be refused (toml::parse_error, CLI::Error,
// coral::error) or set the app's flags; any other exception, or a sanitizer
// report, is a crash.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <toml++/toml.h>

#include "coral/core/error.hpp"
#include "fuzz_support.hpp"

namespace {

/// Where the parsed flags land.
struct flags {
  std::string log_level, env, topology = "sync", algo = "ppo", actions, run_dir;
  std::vector<std::string> env_args;
  std::uint64_t seed = 0;
  std::int64_t steps = 10, total_steps = 100000, horizon = 128;
  std::size_t num_envs = 8, threads = 1, batch_size = 8, replay_capacity = 100000;
  double learning_rate = 5e-3, gamma = 0.99, priority_alpha = 0.6;
  std::optional<double> target_return;
  std::vector<std::size_t> hidden{64, 64};
  bool pin = false, json = false, keep_going = false, resume = false;
};

/// An app with coral's shape (apps/coral/*_command.cpp) over `f`.
void declare(CLI::App& app, flags& f) {
  app.set_config("--config", "", "read flags from a TOML file");
  app.add_option("--log-level", f.log_level)
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.require_subcommand(1);

  auto* envs = app.add_subcommand("envs", "list envs");
  envs->add_option("--env", f.env);
  envs->add_option("--env-arg", f.env_args);
  envs->add_flag("--json", f.json);
  auto* rollout = envs->add_subcommand("rollout", "print a trajectory");
  rollout->add_option("--env", f.env)->required();
  rollout->add_option("--env-arg", f.env_args);
  rollout->add_option("--seed", f.seed);
  rollout->add_option("--steps", f.steps);
  rollout->add_option("--actions", f.actions);

  auto* bench = app.add_subcommand("bench", "sampling throughput");
  bench->add_option("--env", f.env);
  bench->add_option("--env-arg", f.env_args);
  bench->add_option("--topology", f.topology)->check(CLI::IsMember({"sync", "double-buffer", "pool"}));
  bench->add_option("--num-envs", f.num_envs)->check(CLI::PositiveNumber);
  bench->add_option("--threads", f.threads)->check(CLI::Range(1, 1024));
  bench->add_option("--batch-size", f.batch_size);
  bench->add_flag("--pin", f.pin);
  bench->add_flag("--json", f.json);

  auto* train = app.add_subcommand("train", "train an agent");
  train->add_option("--env", f.env);
  train->add_option("--env-arg", f.env_args);
  train->add_option("--algo", f.algo)->check(CLI::IsMember({"ppo", "dqn"}));
  train->add_option("--seed", f.seed);
  train->add_option("--total-steps", f.total_steps);
  train->add_option("--target-return", f.target_return);
  train->add_flag("--keep-going", f.keep_going);
  train->add_option("--num-envs", f.num_envs);
  train->add_option("--horizon", f.horizon);
  train->add_option("--hidden", f.hidden);
  train->add_option("--learning-rate", f.learning_rate);
  train->add_option("--gamma", f.gamma)->check(CLI::Range(0.0, 1.0));
  train->add_option("--replay-capacity", f.replay_capacity);
  train->add_option("--priority-alpha", f.priority_alpha);
  train->add_option("--run-dir", f.run_dir);
  train->add_flag("--resume", f.resume);
}

/// The config loader under test: turns `text`, a TOML file's content, into
/// the flags of `app`. Today that is CLI11's own reader (what `--config`
/// runs); the strict loader of apps/coral replaces this body.
void load_config(CLI::App& app, const std::string& text) {
  std::istringstream in(text);
  app.parse_from_stream(in);
}

/// Whether load_config() refuses every text toml++ refuses. CLI11's reader
/// does not (it reads `[train` or `a = = 1` without a word: issue 10, defect
/// 4); the strict loader must, and then this is true.
constexpr bool loader_is_strict = false;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  bool valid_toml = true;
  try {
    const toml::table table = toml::parse(std::string_view(text), std::string_view("fuzz.toml"));
  } catch (const toml::parse_error&) {
    valid_toml = false;
  }
  CLI::App app("coral", "coral");
  flags f;
  declare(app, f);
  try {
    load_config(app, text);
  } catch (const CLI::Error&) {
    return 0;  // refused, naming what is wrong
  } catch (const coral::error&) {
    return 0;
  }
  coral::fuzz::check(valid_toml || !loader_is_strict, "the config loader accepted a text that is not TOML");
  return 0;
}
