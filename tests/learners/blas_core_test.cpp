// blas_core_for(): OpenBLAS's kernel set for an Intel CPU's features, and
// no choice (OpenBLAS's own stands) for anything else; which
// OPENBLAS_NUM_THREADS values are a thread count.

#include "coral/learners/blas_core.hpp"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>


using coral::learners::blas_core_for;
using coral::cpu_features;

namespace {

bool names(const char* core, const char* expected) { return core != nullptr && std::strcmp(core, expected) == 0; }

}  // namespace

TEST_CASE("blas_core_for gives an Intel CPU the kernels of its widest vectors", "[blas]") {
  CHECK(names(blas_core_for({.intel = true, .avx2 = true, .avx512 = true}), "SkylakeX"));
  CHECK(names(blas_core_for({.intel = true, .avx2 = true}), "Haswell"));
  // Without AVX2 (or with the OS not saving its registers) OpenBLAS chooses.
  CHECK(blas_core_for({.intel = true}) == nullptr);
}

TEST_CASE("blas_core_for leaves other vendors' CPUs to OpenBLAS", "[blas]") {
  CHECK(blas_core_for({.intel = false, .avx2 = true, .avx512 = true}) == nullptr);
  CHECK(blas_core_for({.intel = false, .avx2 = true}) == nullptr);
  CHECK(blas_core_for({}) == nullptr);
}

TEST_CASE("an OPENBLAS_NUM_THREADS that OpenBLAS reads as a positive count is kept; anything else is not a count", "[blas]") {
  const char* before = std::getenv("OPENBLAS_NUM_THREADS");
  const std::string saved = before != nullptr ? before : "";
  ::unsetenv("OPENBLAS_NUM_THREADS");
  CHECK_FALSE(coral::learners::blas_threads_chosen());
  for (const char* not_a_count : {"", "0", "00", "abc", "-2", "x2"}) {
    INFO("OPENBLAS_NUM_THREADS='" << not_a_count << "'");
    ::setenv("OPENBLAS_NUM_THREADS", not_a_count, 1);
    CHECK_FALSE(coral::learners::blas_threads_chosen());
  }
  for (const char* count : {"1", "2", "16", "0002", "2x", " 2", "+2", "99999", "123456789012345678901234567890"}) {
    INFO("OPENBLAS_NUM_THREADS='" << count << "'");
    ::setenv("OPENBLAS_NUM_THREADS", count, 1);
    CHECK(coral::learners::blas_threads_chosen());
  }
  if (before != nullptr) {
    ::setenv("OPENBLAS_NUM_THREADS", saved.c_str(), 1);
  } else {
    ::unsetenv("OPENBLAS_NUM_THREADS");
  }
}
