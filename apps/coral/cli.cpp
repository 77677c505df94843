#include "coral/cli.hpp"

#include <string>

#include "coral/core/error.hpp"
#include "coral/core/logging.hpp"

namespace coral::cli {

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app("coral: an actor-model runtime for reinforcement learning", "coral");
  app.set_config("--config", "", "read flags from a TOML file ([envs.rollout] sections for subcommands)");
  app.add_option_function<std::string>(
         "--log-level", [](const std::string& level) { coral::log::set_level(coral::log::parse_level(level)); },
         "log level (default info)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.require_subcommand(1);

  add_envs_command(app, out);
  add_bench_command(app, out);
#ifdef CORAL_HAVE_TRAIN
  add_train_command(app, out);
#endif

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err);
  } catch (const coral::error& e) {
    // Subcommands run from CLI11 callbacks at the end of parse(), after every
    // option (--log-level included) has been applied.
    err << "error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace coral::cli
