// blas_core_for(): OpenBLAS's kernel set for an Intel CPU's features, and
// no choice (OpenBLAS's own stands) for anything else; which
// OPENBLAS_NUM_THREADS values are a thread count.

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "coral/learners/blas_core.hpp"

using coral::learners::blas_core_for;
using coral::learners::cpu_features;

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

TEST_CASE("read_cpu_features agrees with the kernel's /proc/cpuinfo", "[blas]") {
#if !defined(__x86_64__)
  WARN("not x86-64: read_cpu_features reads nothing");
  CHECK_FALSE(coral::learners::read_cpu_features().avx2);
  return;
#endif
  std::ifstream in("/proc/cpuinfo");
  REQUIRE(in);
  std::string line, vendor;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_first_of(" \t"));
    if (key == "vendor_id" && vendor.empty()) vendor = line.substr(colon + 2);
    if (key == "flags" && flags.empty()) {
      std::istringstream words(line.substr(colon + 1));
      for (std::string w; words >> w;) flags.insert(w);
    }
  }
  REQUIRE_FALSE(flags.empty());
  const auto has = [&](const char* f) { return flags.count(f) > 0; };
  const cpu_features f = coral::learners::read_cpu_features();
  CHECK(f.intel == (vendor == "GenuineIntel"));
  // Linux lists AVX's flags only where it saves the registers they need.
  CHECK(f.avx2 == (has("avx2") && has("fma")));
  CHECK(f.avx512 == (f.avx2 && has("avx512f") && has("avx512dq") && has("avx512cd") && has("avx512bw") &&
                     has("avx512vl")));
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
