#include "coral/cli.hpp"

#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "coral/command_line.hpp"
#include "coral/config_file.hpp"
#include "coral/core/error.hpp"
#include "coral/core/interrupts.hpp"
#include "coral/core/logging.hpp"
#include "coral/flag_checks.hpp"

namespace coral::cli {
namespace {

constexpr const char* config_help =
    "read flags from a TOML file: global flags at the top, each command's in its section ([train], [bench], "
    "[envs], [envs.rollout]); flags typed on the command line win (docs/cli.md)";

// `--config` for the help of every command; the command line scanner takes
// it out before CLI11 parses, so the option itself never receives a value.
void add_config_help(CLI::App& app, std::string& unused) {
  app.add_option("--config", unused, config_help);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) add_config_help(*sub, unused);
}

}  // namespace

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  return run(argc, argv, out, err, run_hooks{});
}

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err, [[maybe_unused]] const run_hooks& hooks) {
  CLI::App app("coral: an actor-model runtime for reinforcement learning", "coral");
  app.add_option_function<std::string>(
         "--log-level", [](const std::string& level) { coral::log::set_level(coral::log::parse_level(level)); },
         "log level (default info)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.require_subcommand(1);

  add_envs_command(app, out);
  add_bench_command(app, out);
  add_tune_command(app, out);
#ifdef CORAL_HAVE_TRAIN
  add_train_command(app, out, err, hooks);
  add_eval_command(app, out);
#endif
  std::string unused_config;
  add_config_help(app, unused_config);
  add_value_checks(app);

  // From the first moment, SIGINT and SIGTERM ask for a stop rather than kill:
  // a command checks interrupted() (a runtime stops at once if a signal came
  // while it was being built), and a second signal ends the process at once.
  const interrupt_scope interrupts([] {});
  try {
    const command_info commands = describe_commands(app);
    const scanned_command_line line = scan_command_line(argc, argv, commands);
    config_values file;
    if (line.config) file = read_config(*line.config, commands);
    std::vector<std::string> tokens = merge_command_line(line, file);
    std::reverse(tokens.begin(), tokens.end());  // CLI11 takes the vector last token first
    // Subcommands run from CLI11 callbacks at the end of parse(), after every
    // option (--log-level included) has been applied.
    app.parse(tokens);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e, out, err);  // --help
    err << "error: " << e.what() << '\n';
    return exit_code::rejected;
  } catch (const config_error& e) {
    err << "error: " << e.what() << '\n';
    return exit_code::rejected;
  } catch (const std::exception& e) {
    err << "error: " << e.what() << '\n';
    return exit_code::failed;
  }
  return exit_code::ok;
}

}  // namespace coral::cli
