#include "coral/replay/detail/isa.hpp"

namespace coral::replay::detail {

bool isa_available(isa which) noexcept {
  switch (which) {
    case isa::baseline:
      return true;
    case isa::avx2:
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
      return __builtin_cpu_supports("avx2") != 0;
#else
      return false;
#endif
    case isa::avx512:
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
      return __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx512dq") != 0 &&
             __builtin_cpu_supports("avx512vl") != 0;
#else
      return false;
#endif
  }
  return false;
}

std::vector<isa> available_isas() {
  std::vector<isa> all{isa::baseline};
  if (isa_available(isa::avx2)) all.push_back(isa::avx2);
  if (isa_available(isa::avx512)) all.push_back(isa::avx512);
  return all;
}

isa best_isa() noexcept {
  static const isa best = isa_available(isa::avx512) ? isa::avx512
                          : isa_available(isa::avx2) ? isa::avx2
                                                     : isa::baseline;
  return best;
}

}  // namespace coral::replay::detail
