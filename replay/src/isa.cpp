#include "coral/replay/detail/isa.hpp"

#include "coral/core/cpu_features.hpp"

namespace coral::replay::detail {

bool isa_available(isa which) noexcept {
  switch (which) {
    case isa::baseline:
      return true;
    case isa::avx2:
      return host_cpu_features().avx2;
    case isa::avx512:
      return host_cpu_features().avx512;
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
