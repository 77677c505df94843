#pragma once
// Private: what a training run sets up so that it never hangs: the stop
// deadline and the way out when actors ignore a stop.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <ostream>
#include <string>

#include "coral/core/exit_codes.hpp"

namespace coral::training::detail {

/// How long a training run's actors may take to finish after a stop: a
/// learner in the middle of an update, or the replay actor in a large insert,
/// finishes that first.
inline constexpr std::chrono::milliseconds train_stop_deadline{10'000};

/// The runtime's on_stop_timeout for a command-line run: an actor stuck in
/// code that never yields (an env step that blocks) would make the runtime
/// wait for its thread, so the process reports and ends here instead.
inline std::function<void(const std::string&)> exit_on_stop_timeout(std::ostream& progress) {
  return [&progress](const std::string& what) {
    progress << std::flush;
    std::cerr << "error: " << what << " (abandoned; exiting)" << std::endl;
    std::fflush(nullptr);
    std::_Exit(exit_codes::run_failed);
  };
}

}  // namespace coral::training::detail
