#pragma once
/// \file
/// Test support: scratch directories and files under the system's temporary
/// directory. A test binary's files are named after the test and the process,
/// so that binaries ctest runs side by side never share one.

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

namespace coral::test {

/// `<temp>/coral-<name>-<pid>`, removed with everything under it: a path
/// that does not exist (for what a test wants created for it).
inline std::filesystem::path fresh_path(const std::string& name) {
  auto path = std::filesystem::temp_directory_path() / ("coral-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(path);
  return path;
}

/// The same path as an empty directory.
inline std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = fresh_path(name);
  std::filesystem::create_directories(dir);
  return dir;
}

/// Every byte of the file at `path` (none when it cannot be opened).
inline std::vector<char> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace coral::test
