// The `coral` command has OpenBLAS choose its kernels again where it chose
// its generic ones on a CPU that can do better (learners/blas_core.hpp), and
// leaves a user's OPENBLAS_CORETYPE alone. OpenBLAS prints the kernel set
// it initialises ("Core: SkylakeX") when OPENBLAS_VERBOSE is 2. It also has
// OpenBLAS compute on one thread, as torch does, unless the user set
// OPENBLAS_NUM_THREADS; the learners' debug line says how many.

#include "coral/learners/blas_core.hpp"

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "child_process.hpp"

namespace {

using coral::test::count_of;

// The kernel set of the last "Core: " line; empty where there is none.
std::string last_core(const std::string& err) {
  const auto at = err.rfind("Core: ");
  if (at == std::string::npos) return {};
  const auto begin = at + 6;
  return err.substr(begin, err.find('\n', begin) - begin);
}

coral::test::outcome train_briefly(std::vector<std::string> extra_env) {
  coral::test::invocation inv;
  inv.argv = {CORAL_BINARY, "--log-level", "debug", "train", "--total-steps", "2000", "--no-run-dir",
              "--progress-seconds", "0"};
  extra_env.push_back("OPENBLAS_VERBOSE=2");
  inv.extra_env = std::move(extra_env);
  inv.removed_env = {"OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS"};
  // The run ended, and well: every check after this reads its output.
  auto r = coral::test::run_children({inv}, 1, std::chrono::milliseconds(60'000)).front();
  INFO(r.err);
  REQUIRE_FALSE(r.killed);
  REQUIRE(r.exit_code == 0);
  return r;
}

// Whether this build runs OpenBLAS (with a warning where it does not: the
// tests below then have nothing to check).
bool has_openblas() {
  if (!coral::learners::blas_core_in_use().empty()) return true;
  WARN("this build's BLAS is not OpenBLAS: nothing to check");
  return false;
}

}  // namespace

TEST_CASE("coral train runs the OpenBLAS kernels of this CPU's features", "[blas]") {
  if (!has_openblas()) return;
  const auto r = train_briefly({});
  INFO(r.err);
  const char* better = coral::learners::blas_core_for(coral::read_cpu_features());
  const auto initialised = count_of(r.err, "Core: ");
  if (r.err.starts_with("Core: Prescott\n") && better != nullptr) {
    // OpenBLAS chose its generic kernels when it loaded; coral had it choose again.
    CHECK(initialised == 2);
    CHECK(last_core(r.err) == better);
  } else {
    // OpenBLAS knew this CPU (or coral has nothing better): its choice stands.
    CHECK(initialised == 1);
  }
  // A CPU with AVX2 never ends on the generic kernels.
  if (better != nullptr) CHECK(last_core(r.err) != "Prescott");
  CHECK(r.err.find("generic SSE3 kernels") == std::string::npos);
}

TEST_CASE("coral train keeps the OPENBLAS_CORETYPE a user set", "[blas]") {
  if (!has_openblas()) return;
  // Prescott: the kernel set every x86-64 CPU runs.
  const auto r = train_briefly({"OPENBLAS_CORETYPE=Prescott"});
  INFO(r.err);
  CHECK(count_of(r.err, "Core: ") == 1);
  CHECK(count_of(r.err, "Core: Prescott\n") == 1);
  // The user chose: no advice to choose.
  CHECK(r.err.find("generic SSE3 kernels") == std::string::npos);
}

TEST_CASE("coral train runs OpenBLAS on one thread unless OPENBLAS_NUM_THREADS says otherwise", "[blas]") {
  if (!has_openblas()) return;
  {
    const auto r = train_briefly({});
    INFO(r.err);
    CHECK(count_of(r.err, "kernels on 1 thread(s) (") == 1);
    CHECK(count_of(r.err, "OPENBLAS_NUM_THREADS unset)") == 1);
  }
  {
    // The user's count stands (OpenBLAS caps it at the cores).
    const auto r = train_briefly({"OPENBLAS_NUM_THREADS=2"});
    INFO(r.err);
    const unsigned threads = std::min(2U, std::max(1U, std::thread::hardware_concurrency()));
    CHECK(count_of(r.err, "kernels on " + std::to_string(threads) + " thread(s) (") == 1);
    CHECK(count_of(r.err, "OPENBLAS_NUM_THREADS 2)") == 1);
  }
  {
    // Not a count (OpenBLAS reads it as "one per core"): coral's one thread.
    const auto r = train_briefly({"OPENBLAS_NUM_THREADS=abc"});
    INFO(r.err);
    CHECK(count_of(r.err, "kernels on 1 thread(s) (") == 1);
  }
}
