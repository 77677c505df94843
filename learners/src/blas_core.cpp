#include "coral/learners/blas_core.hpp"

#include <dlfcn.h>

#include <cstdlib>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace coral::learners {

cpu_features read_cpu_features() noexcept {
  cpu_features f;
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return f;
  const unsigned max_leaf = eax;
  // "GenuineIntel" comes back in ebx, edx, ecx.
  f.intel = ebx == 0x756e6547 && edx == 0x49656e69 && ecx == 0x6c65746e;
  if (max_leaf < 7) return f;
  __cpuid(1, eax, ebx, ecx, edx);
  const bool fma = (ecx & (1u << 12)) != 0;
  const bool osxsave = (ecx & (1u << 27)) != 0;
  const bool avx = (ecx & (1u << 28)) != 0;
  if (!osxsave || !avx) return f;
  // Which register states the OS saves on a context switch (XCR0).
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool os_ymm = (xcr0_lo & 0x6u) == 0x6u;    // SSE and AVX state
  const bool os_zmm = (xcr0_lo & 0xe6u) == 0xe6u;  // and opmask, ZMM0-15 upper halves, ZMM16-31
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const bool avx2 = (ebx & (1u << 5)) != 0;
  const bool avx512 = (ebx & (1u << 16)) != 0     // F
                      && (ebx & (1u << 17)) != 0  // DQ
                      && (ebx & (1u << 28)) != 0  // CD
                      && (ebx & (1u << 30)) != 0  // BW
                      && (ebx & (1u << 31)) != 0; // VL
  f.avx2 = os_ymm && avx2 && fma;
  f.avx512 = f.avx2 && os_zmm && avx512;
#endif
  return f;
}

const char* blas_core_for(const cpu_features& cpu) noexcept {
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
  return blas_core_for(read_cpu_features());
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

}  // namespace coral::learners
