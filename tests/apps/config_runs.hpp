#pragma once
// Test support: `coral train` run as a user runs it, the built binary with a
// checked-in config (`coral train --config configs/<name>.toml`), and the
// figures of its final JSON line.

#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "child_process.hpp"

namespace coral::test {

/// A run of `coral train --config configs/<name>.toml` plus `extra`, in a
/// fresh directory, killed after `limit`; its output is printed, so that a
/// failure shows its learning curve.
inline outcome train_with_config(const std::string& name, const std::vector<std::string>& extra,
                                 std::chrono::milliseconds limit) {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("coral-config-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  invocation inv;
  inv.argv = {CORAL_BINARY, "train", "--config", std::string(CORAL_SOURCE_DIR) + "/configs/" + name + ".toml",
              "--no-run-dir", "--progress-seconds", "15"};
  inv.argv.insert(inv.argv.end(), extra.begin(), extra.end());
  inv.cwd = dir.string();
  auto out = run_children({inv}, 1, limit).front();
  std::cout << out.out << out.err << std::flush;
  fs::remove_all(dir);
  return out;
}

/// The number after `"key":` in the last line of `text` (the final JSON).
inline double json_number(const std::string& text, const std::string& key) {
  const auto end = text.find_last_not_of('\n');
  const auto line = text.substr(text.rfind('\n', end) + 1);
  const auto at = line.find("\"" + key + "\":");
  REQUIRE(at != std::string::npos);
  return std::stod(line.substr(at + key.size() + 3));
}

}  // namespace coral::test
