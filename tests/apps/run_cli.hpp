#pragma once
/// \file
/// Test support: runs `coral ARGS...` in-process through cli::run and
/// returns its exit code, with what it wrote to stdout and stderr.

#include <sstream>
#include <string>
#include <vector>

#include "coral/cli.hpp"

namespace coral::test {

inline int run_cli(std::vector<std::string> args, std::string& out, std::string& err) {
  args.insert(args.begin(), "coral");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  std::ostringstream o, e;
  const int rc = coral::cli::run(static_cast<int>(argv.size()), argv.data(), o, e);
  out = o.str();
  err = e.str();
  return rc;
}

}  // namespace coral::test
