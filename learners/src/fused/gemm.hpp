#pragma once
// Private: the three products the fused engine's layers need, row-major,
// through OpenBLAS's cblas_sgemm (gemm.cpp says why that library).

#include <cstddef>

namespace coral::learners::fused::detail {

/// c [m][n] = a [m][k] · bᵀ, b [n][k]; + c first when `accumulate`.
void gemm_nt(std::size_t m, std::size_t n, std::size_t k, const float* a, const float* b, float* c,
             bool accumulate) noexcept;
/// c [m][n] = a [m][k] · b [k][n].
void gemm_nn(std::size_t m, std::size_t n, std::size_t k, const float* a, const float* b, float* c) noexcept;
/// c [m][n] = aᵀ · b, a [k][m], b [k][n].
void gemm_tn(std::size_t m, std::size_t n, std::size_t k, const float* a, const float* b, float* c) noexcept;

}  // namespace coral::learners::fused::detail
