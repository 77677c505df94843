#include "coral/core/cpu_features.hpp"

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

TEST_CASE("read_cpu_features agrees with the kernel's /proc/cpuinfo", "[core][cpu_features]") {
#if !defined(__x86_64__)
  WARN("not x86-64: read_cpu_features reads nothing");
  CHECK_FALSE(coral::read_cpu_features().avx2);
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
  const coral::cpu_features f = coral::read_cpu_features();
  CHECK(f.intel == (vendor == "GenuineIntel"));
  // Linux lists AVX's flags only where it saves the registers they need.
  CHECK(f.avx2 == (has("avx2") && has("fma")));
  CHECK(f.avx512 == (f.avx2 && has("avx512f") && has("avx512dq") && has("avx512cd") && has("avx512bw") &&
                     has("avx512vl")));
}

TEST_CASE("the host's features are read once and agree with a fresh read", "[core][cpu_features]") {
  const auto& first = coral::host_cpu_features();
  CHECK(&first == &coral::host_cpu_features());
  const auto again = coral::read_cpu_features();
  CHECK(first.intel == again.intel);
  CHECK(first.avx2 == again.avx2);
  CHECK(first.avx512 == again.avx512);
  CHECK((!first.avx512 || first.avx2));  // AVX-512 counts only with AVX2
}
