#include "coral/learners/blas_core.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "coral/core/logging.hpp"

namespace coral::learners {

const char* blas_core_for(const coral::cpu_features& cpu) noexcept {
  if (!cpu.intel) return nullptr;
  if (cpu.avx512) return "SkylakeX";
  if (cpu.avx2) return "Haswell";
  return nullptr;
}

namespace {

template <class Fn>
Fn* blas_function(const char* name) {
  // Looked up rather than linked: coral links libtorch, which links
  // whichever libblas.so.3 the system's alternative points at.
  return reinterpret_cast<Fn*>(::dlsym(RTLD_DEFAULT, name));
}

}  // namespace

std::string blas_core_in_use() {
  auto* corename = blas_function<char*()>("openblas_get_corename");
  if (corename == nullptr) return {};
  const char* name = corename();
  return name != nullptr ? std::string(name) : std::string();
}

const char* blas_core_to_ask_for() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || blas_core_in_use() != "Prescott") return nullptr;
  return blas_core_for(coral::host_cpu_features());
}

std::string choose_blas_core() {
  const char* core = blas_core_to_ask_for();
  auto* quit = blas_function<void()>("gotoblas_dynamic_quit");
  auto* init = blas_function<void()>("gotoblas_dynamic_init");
  if (core == nullptr || quit == nullptr || init == nullptr) return blas_core_in_use();
  ::setenv("OPENBLAS_CORETYPE", core, 0);
  quit();
  init();
  return blas_core_in_use();
}

int blas_threads_in_use() {
  auto* threads = blas_function<int()>("openblas_get_num_threads");
  return threads != nullptr ? threads() : 0;
}

bool blas_threads_chosen() {
  const char* value = std::getenv("OPENBLAS_NUM_THREADS");
  // OpenBLAS reads the value as atoi() does ("2x" is 2) and takes anything
  // below 1 ("0", "abc", "-2", empty) as one thread per core. strtol: the
  // same reading, without atoi's overflow.
  return value != nullptr && std::strtol(value, nullptr, 10) > 0;
}

int use_one_blas_thread() {
  auto* set_threads = blas_function<void(int)>("openblas_set_num_threads");
  if (set_threads != nullptr && !blas_threads_chosen()) set_threads(1);
  return blas_threads_in_use();
}

void set_up_blas() {
  choose_blas_core();
  use_one_blas_thread();
}

void report_blas_setup() {
  static std::once_flag once;
  std::call_once(once, [] {
    // OpenBLAS's kernels: the `coral` command has OpenBLAS choose again
    // first thing in main() where it chose its generic ones (blas_core.hpp).
    // Here, with threads running, that is no longer safe: a host program
    // (Python, an app of the user's) is told what to set instead.
    if (const char* better = blas_core_to_ask_for(); better != nullptr) {
      log::get("learners")->warn(
          "OpenBLAS does not know this CPU and runs its generic SSE3 kernels (Prescott): updates are slower. "
          "Set OPENBLAS_CORETYPE={} before the process starts (the coral command does this itself)",
          better);
    } else if (const std::string core = blas_core_in_use(); !core.empty()) {
      const char* chosen = std::getenv("OPENBLAS_CORETYPE");
      const char* threads = std::getenv("OPENBLAS_NUM_THREADS");
      log::get("learners")->debug("OpenBLAS runs its {} kernels on {} thread(s) (OPENBLAS_CORETYPE {}, "
                                  "OPENBLAS_NUM_THREADS {})",
                                  core, blas_threads_in_use(), chosen != nullptr ? chosen : "unset",
                                  threads != nullptr ? threads : "unset");
    }
  });
}

}  // namespace coral::learners
