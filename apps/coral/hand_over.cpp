// hand_over_to_torch() (cli.hpp): the `coral` command links no libtorch, so
// that `--help`, a refused flag, `coral envs` and `coral bench` answer without
// loading it; a run that needs the torch learners continues in coral-torch,
// in this same process (same PID, same standard streams, signals pending).

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "coral/cli.hpp"
#include "coral/core/error.hpp"
#include "coral/core/interrupts.hpp"
#include "coral/errors.hpp"

namespace coral::cli {
namespace {

/// Where coral-torch may be, in order: beside this program (the build tree,
/// a prefix's bin/), then the prefix's libexec/coral/.
std::vector<std::filesystem::path> torch_program_candidates() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const auto dir = self.parent_path();
  return {dir / "coral-torch", dir.parent_path() / "libexec" / "coral" / "coral-torch"};
}

}  // namespace

void hand_over_to_torch(const char* const* argv) {
  std::string looked;
  for (const auto& path : torch_program_candidates()) {
    if (::access(path.c_str(), X_OK) != 0) {
      looked += looked.empty() ? path.string() : " and " + path.string();
      continue;
    }
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGHUP);
    ::pthread_sigmask(SIG_BLOCK, &stops, nullptr);
    // A stop that came while the flags were checked: coral-torch gets it too.
    if (interrupted()) ::kill(::getpid(), SIGINT);
    ::execv(path.c_str(), const_cast<char* const*>(argv));
    const int e = errno;
    ::pthread_sigmask(SIG_UNBLOCK, &stops, nullptr);
    throw config_error(fmt::format(fmt::runtime(errors::torch_program_failed), path.string(), std::strerror(e)));
  }
  throw config_error(fmt::format(fmt::runtime(errors::torch_program_missing), looked.empty() ? "(no /proc/self/exe)" : looked));
}

}  // namespace coral::cli
