// The libtorch-side functions that the sources the fuzz build compiles
// without libtorch refer to. validate() and train() are reached by no
// target (`coral train`'s callback, which the config target removes: it
// parses flags and runs no command); if that changes, the abort says so at
// once instead of giving wrong figures. register_builtin_algorithms() is
// called when the command line is built: without libtorch there are no
// built-in algorithms, so their flags are not declared.

#include <cstdio>
#include <cstdlib>
#include <ostream>

#include "coral/learners/train.hpp"

namespace coral::learners {
namespace {

[[noreturn]] void needs_libtorch(const char* what) {
  std::fprintf(stderr, "fuzz: %s needs libtorch, which the fuzz build leaves out\n", what);
  std::abort();
}

}  // namespace

void register_builtin_algorithms() {}

bool torch_linked() noexcept { return false; }

bool needs_torch(const training::train_options&) { needs_libtorch("learners::needs_torch()"); }

void validate(const training::train_options&) { needs_libtorch("learners::validate()"); }

training::train_result train(const training::train_options&, std::ostream&, std::ostream&) { needs_libtorch("learners::train()"); }

}  // namespace coral::learners
