#include "coral/sampler_flags.hpp"

// The sampler flags, declared once for `coral train` and `coral bench`.

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/cli.hpp"
#include "coral/config_file.hpp"
#include "coral/core/error.hpp"
#include "coral/errors.hpp"

namespace cli = coral::cli;
using namespace std::chrono_literals;

namespace {

// The sampler options of `args` (what is typed after a command that has
// only the sampler flags).
coral::actors::sampler_options parse(std::vector<std::string> args, const cli::sampler_flag_defaults& defaults = {}) {
  CLI::App app("sampler flags");
  cli::sampler_flags flags;
  cli::add_sampler_flags(app, flags, defaults);
  std::reverse(args.begin(), args.end());  // CLI11 takes the vector last token first
  app.parse(args);
  return cli::to_sampler_options(flags);
}

// Every field of `o`, so that a mismatch shows them all.
std::string fields(const coral::actors::sampler_options& o) {
  return fmt::format(
      "env {} args {} seed {} topology {} envs {} batch {} min batch {} timeout {}us per group {} threads {} pin {} "
      "spin {}us inference thread {} single executor {} reset on error {} check finite {}",
      o.env, o.env_args, o.seed, coral::actors::to_string(o.topo), o.num_envs, o.batch_size, o.min_batch_size,
      o.batch_timeout.count(), o.envs_per_group, o.threads, o.pin, o.spin.count(), o.inference_thread,
      o.executor == coral::executor_mode::single, o.on_env_error == coral::actors::env_error_policy::reset,
      o.check_finite);
}

// The flags add_sampler_flags declares, as the config loader sees them.
std::vector<cli::flag_info> sampler_flag_infos() {
  CLI::App app("sampler flags");
  cli::sampler_flags flags;
  cli::add_sampler_flags(app, flags);
  return cli::describe_commands(app).flags;
}

// A TOML value of the flag's kind.
std::string toml_value(const cli::flag_info& flag) {
  if (flag.repeatable) return R"(["a=1", "b=2"])";
  switch (flag.kind) {
    case cli::value_kind::on_off:
      return "true";
    case cli::value_kind::whole:
    case cli::value_kind::unsigned_whole:
      return "1";
    case cli::value_kind::number:
      return "1.5";
    case cli::value_kind::text:
      return "\"x\"";
    case cli::value_kind::count_or_auto:
      return "\"auto\"";
  }
  return {};
}

}  // namespace

TEST_CASE("the sampler flags give the sampler's options, with its defaults and the command's thread count",
          "[apps][sampler_flags]") {
  coral::actors::sampler_options expected;
  expected.threads = 3;
  CHECK(fields(parse({}, {.threads = 3})) == fields(expected));

  const coral::actors::sampler_options given{.env = "race",
                                             .env_args = {{"max_steps", "9"}},
                                             .seed = 7,
                                             .topo = coral::actors::topology::double_buffer,
                                             .num_envs = 16,
                                             .batch_size = 8,
                                             .min_batch_size = 4,
                                             .batch_timeout = 250us,
                                             .envs_per_group = 2,
                                             .threads = 1,
                                             .pin = true,
                                             .spin = 0us,
                                             .inference_thread = true,
                                             .executor = coral::executor_mode::single,
                                             .on_env_error = coral::actors::env_error_policy::reset,
                                             .check_finite = false};
  CHECK(fields(parse({"--env", "race", "--env-arg", "max_steps=9", "--topology", "double-buffer", "--executor", "single",
                      "--seed", "7", "--num-envs", "16", "--envs-per-group", "2", "--batch-size", "8",
                      "--min-batch-size", "4", "--batch-timeout-us", "250", "--threads", "1", "--spin-us", "0",
                      "--pin", "--inference-thread", "--on-env-error", "reset", "--allow-non-finite"},
                     {.threads = 3})) == fields(given));
}

TEST_CASE("sampler flags that contradict each other or have a bad value are refused naming the flag",
          "[apps][sampler_flags]") {
  using Catch::Message;
  CHECK_THROWS_MATCHES(parse({"--executor", "single", "--threads", "2"}), coral::config_error,
                       Message(fmt::format(fmt::runtime(cli::errors::conflicting_flags), "--threads 2",
                                           "--executor single", "the single executor runs every actor on one thread")));
  // A default above 1 is no conflict: the single executor runs on one thread whatever it is.
  CHECK(parse({"--executor", "single"}, {.threads = 2}).executor == coral::executor_mode::single);
  CHECK_THROWS_MATCHES(parse({"--batch-timeout-us", "100"}), coral::config_error,
                       Message(fmt::format(fmt::runtime(cli::errors::flag_needs), "--batch-timeout-us",
                                           "--min-batch-size", "the timeout applies only to dynamic batching")));
  CHECK(parse({"--batch-timeout-us", "100", "--min-batch-size", "2"}).batch_timeout == 100us);
  CHECK(parse({}).envs_per_group == 0);  // auto, the default
  CHECK(parse({"--envs-per-group", "auto"}).envs_per_group == 0);
  CHECK(parse({"--envs-per-group", "3"}).envs_per_group == 3);
  // Read as every whole-number flag is: 1e1 is ten, 010 is ten (not 1, not octal 8).
  CHECK(parse({"--envs-per-group", "1e1"}).envs_per_group == 10);
  CHECK(parse({"--envs-per-group", "010"}).envs_per_group == 10);
  CHECK(parse({}).spin == coral::actors::spin_auto);  // auto, the default
  CHECK(parse({"--spin-us", "auto"}).spin == coral::actors::spin_auto);
  CHECK(parse({"--spin-us", "1e6"}).spin == 1'000'000us);
  CHECK(parse({"--spin-us", "2.5e1"}).spin == 25us);
  CHECK(parse({"--spin-us", "010"}).spin == 10us);
  CHECK_THROWS_MATCHES(parse({"--topology", "ring"}), coral::config_error,
                       Message(fmt::format(fmt::runtime(coral::errors::bad_value), "--topology", "ring",
                                           "sync, double-buffer, pool")));
  CHECK_THROWS_MATCHES(parse({"--executor", "fibers"}), coral::config_error,
                       Message(fmt::format(fmt::runtime(coral::errors::bad_value), "--executor", "fibers",
                                           "threads, single")));
}

TEST_CASE("coral train and coral bench take the same sampler flags, on the command line and in their config sections",
          "[apps][sampler_flags][config]") {
  CLI::App app("coral");
  std::ostringstream out;
  cli::add_bench_command(app, out);
  std::vector<std::string> sections{"bench"};
#ifdef CORAL_HAVE_TRAIN
  cli::add_train_command(app, out, out);
  sections.emplace_back("train");
  CHECK(app.get_subcommand("train")->get_option("--threads")->get_default_str() == "1");
#endif
  CHECK(app.get_subcommand("bench")->get_option("--threads")->get_default_str() == "2");
  const auto root = cli::describe_commands(app);
  const auto flags = sampler_flag_infos();
  REQUIRE(flags.size() == 16);

  std::string toml;
  for (const auto& section : sections) {
    const auto* command = root.find_command(section);
    REQUIRE(command != nullptr);
    toml += fmt::format("[{}]\n", section);
    for (const auto& flag : flags) {
      INFO(section << ": --" << flag.name);
      const auto* declared = command->find_flag(flag.name);
      REQUIRE(declared != nullptr);
      CHECK(declared->kind == flag.kind);
      CHECK(declared->repeatable == flag.repeatable);
      toml += fmt::format("{} = {}\n", flag.name, toml_value(flag));
    }
  }
  const auto values = cli::parse_config(toml, "sampler.toml", root);
  for (const auto& section : sections) {
    INFO(section);
    REQUIRE(values.contains(section));
    CHECK(values.at(section).size() == flags.size());
  }
}
