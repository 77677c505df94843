// Private header under test: the files a training run writes besides its actors' state.
#include "../../training/src/run_files.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/scoped_env.hpp"
#include "coral/training/errors.hpp"

namespace fs = std::filesystem;
namespace lm = coral::training::errors;

using coral::training::detail::plot_learning_curve;

namespace {

/// `dir` first on PATH, for one scope.
coral::test::scoped_env path_prefix(const fs::path& dir) {
  const char* old = std::getenv("PATH");
  return {"PATH", dir.string() + ":" + (old != nullptr ? old : "")};
}

/// A fresh directory holding an executable `gnuplot` that runs `body` (sh).
fs::path fake_gnuplot(const std::string& name, const std::string& body) {
  const auto dir = fs::temp_directory_path() / ("coral-run-files-test-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "gnuplot") << "#!/bin/sh\n" << body << "\n";
  fs::permissions(dir / "gnuplot", fs::perms::owner_all);
  return dir;
}

}  // namespace

TEST_CASE("a gnuplot that fails is reported with how it ended, and the run goes on", "[training][run-files][errors]") {
  const auto dir = fake_gnuplot("exit", "exit 3");
  std::ostringstream progress;
  {
    const auto path = path_prefix(dir);
    plot_learning_curve(dir, progress);
  }
  CHECK(progress.str() == fmt::format(fmt::runtime(lm::gnuplot_failed), "exit status 3") + "\n");
  CHECK(fs::exists(dir / "learning_curve.gp"));
  fs::remove_all(dir);
}

TEST_CASE("a gnuplot killed by a signal is reported naming the signal", "[training][run-files][errors]") {
  const auto dir = fake_gnuplot("signal", "kill -9 $$");
  std::ostringstream progress;
  {
    const auto path = path_prefix(dir);
    plot_learning_curve(dir, progress);
  }
  CHECK(progress.str() == "warning: gnuplot failed (killed by signal 9); no learning_curve.png\n");
  fs::remove_all(dir);
}

TEST_CASE("a learning curve whose script cannot be written is reported", "[training][run-files][errors]") {
  const auto missing = fs::temp_directory_path() / "coral-run-files-test-missing" / "nested";
  fs::remove_all(missing.parent_path());
  std::ostringstream progress;
  plot_learning_curve(missing, progress);
  CHECK(progress.str() == fmt::format(fmt::runtime(lm::gnuplot_failed), "cannot write learning_curve.gp") + "\n");
}
