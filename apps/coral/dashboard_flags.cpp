#include "coral/dashboard_flags.hpp"

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/errors.hpp"
#include "coral/flag_checks.hpp"

namespace coral::cli {

void add_dashboard_flags(CLI::App& cmd, dashboard_flags& f, const std::string& what) {
  cmd.add_flag("--dashboard", f.on,
               "serve a read-only live view while it runs (" + what +
                   "; GET /state.json, GET /metrics for Prometheus); its address is printed (docs/cli.md)");
  f.port_option = cmd.add_option("--dashboard-port", f.port, "the live view's port (0: any free port)")
                      ->check(at_most(65535))
                      ->capture_default_str();
  f.bind_option = cmd.add_option("--dashboard-bind", f.bind,
                                 "the live view's address: 127.0.0.1 keeps it on this machine; another (0.0.0.0, "
                                 "an interface's) exposes it on purpose")
                      ->capture_default_str();
}

training::dashboard_options to_dashboard_options(const dashboard_flags& f) {
  for (const auto* o : {f.port_option, f.bind_option}) {
    if (o != nullptr && o->count() > 0 && !f.on) {
      throw config_error(fmt::format(fmt::runtime(errors::flag_needs), o->get_name(), "--dashboard",
                                     "it sets where the live view is served"));
    }
  }
  return {.on = f.on, .bind = f.bind, .port = f.port};
}

}  // namespace coral::cli
