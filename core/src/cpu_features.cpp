#include "coral/core/cpu_features.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace coral {

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

const cpu_features& host_cpu_features() noexcept {
  static const cpu_features features = read_cpu_features();
  return features;
}

}  // namespace coral
