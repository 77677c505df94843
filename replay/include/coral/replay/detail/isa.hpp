#pragma once
/// \file
/// The instruction sets replay's batch kernels come in (the tree's passes in
/// tree_kernels.hpp, the powers in pow_kernel.hpp), and the one this CPU
/// runs. Each kernel gives the same bits in every set, so the choice changes
/// speed only.

#include <vector>

namespace coral::replay::detail {

/// baseline: SSE2 on x86-64 (every such CPU has it), plain C++ elsewhere;
/// avx2: AVX2; avx512: AVX-512 F, DQ and VL. search_level and make_keys
/// have AVX-512 kernels only; without them the caller does their work.
enum class isa { baseline, avx2, avx512 };

/// Whether this CPU runs `which` (baseline: always).
[[nodiscard]] bool isa_available(isa which) noexcept;

/// Every set this CPU runs, baseline first (what the tests compare).
[[nodiscard]] std::vector<isa> available_isas();

/// The widest available, found once; what the buffers use.
[[nodiscard]] isa best_isa() noexcept;

}  // namespace coral::replay::detail
