#pragma once
// The live view's flags, shared by `coral train` and `coral bench`:
// --dashboard, --dashboard-port, --dashboard-bind.

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "coral/training/train_options.hpp"

namespace coral::cli {

/// The flags as given.
struct dashboard_flags {
  bool on = false;
  std::string bind = "127.0.0.1";
  std::uint16_t port = 0;
  const CLI::Option* bind_option = nullptr;
  const CLI::Option* port_option = nullptr;
};

/// Declares the three flags on `cmd`; `what` says what the page shows.
void add_dashboard_flags(CLI::App& cmd, dashboard_flags& f, const std::string& what);

/// The options they give. Refuses --dashboard-port or --dashboard-bind
/// without --dashboard (errors::flag_needs); the address and the port are
/// checked where the page is served (training::dashboard::check).
[[nodiscard]] training::dashboard_options to_dashboard_options(const dashboard_flags& f);

}  // namespace coral::cli
