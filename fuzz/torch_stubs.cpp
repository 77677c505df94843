// The one libtorch function learners/src/checkpoint.cpp refers to, for the
// targets that compile checkpoint.cpp without libtorch. It is reached only by
// network_signature(), which neither the checkpoint reader nor writer calls;
// if that changes, this abort says so at once instead of giving wrong figures.

#include <cstdio>
#include <cstdlib>

#include "coral/learners/network.hpp"

namespace coral::learners {

std::size_t parameter_count(const network_spec&) {
  std::fputs("fuzz: parameter_count() needs libtorch, which the fuzz build leaves out\n", stderr);
  std::abort();
}

}  // namespace coral::learners
