#pragma once
/// \file
/// What the CPU this process runs on offers, for the one choice every
/// hand-written kernel makes at run time: its baseline (SSE2 on x86-64), an
/// AVX2 twin or an AVX-512 twin. Read once, with cpuid and xgetbv, so that a
/// feature counts only where the OS also saves its registers.

namespace coral {

/// The features coral's kernels and OpenBLAS's kernel choice look at.
struct cpu_features {
  bool intel = false;   ///< vendor GenuineIntel
  bool avx2 = false;    ///< AVX2 and FMA, with the OS saving the YMM registers
  bool avx512 = false;  ///< AVX-512 F, CD, BW, DQ and VL, with the OS saving the ZMM registers
};

/// Reads this CPU's features; all false on a CPU that is not x86-64.
[[nodiscard]] cpu_features read_cpu_features() noexcept;

/// This CPU's features, read on the first call. Thread safety: any thread.
[[nodiscard]] const cpu_features& host_cpu_features() noexcept;

}  // namespace coral
