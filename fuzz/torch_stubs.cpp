// The libtorch-side functions that the sources the fuzz build compiles
// without libtorch refer to, each reached by no target; if that changes,
// the abort says so at once instead of giving wrong figures.
//
// - validate(), check_flag_read(), train() and train_result::to_json():
//   apps/coral/train_command.cpp calls them from
//   `coral train`'s callback, which the config target removes: it parses
//   flags and runs no command.

#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>
#include <string_view>

#include "coral/learners/train.hpp"

namespace coral::learners {
namespace {

[[noreturn]] void needs_libtorch(const char* what) {
  std::fprintf(stderr, "fuzz: %s needs libtorch, which the fuzz build leaves out\n", what);
  std::abort();
}

}  // namespace

void validate(const train_options&) { needs_libtorch("learners::validate()"); }

void check_flag_read(std::string_view, std::string_view) { needs_libtorch("learners::check_flag_read()"); }

train_result train(const train_options&, std::ostream&) { needs_libtorch("learners::train()"); }

std::string train_result::to_json(const train_options&) const { needs_libtorch("train_result::to_json()"); }

}  // namespace coral::learners
