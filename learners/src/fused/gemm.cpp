// The fused engine's products (gemm.hpp) through OpenBLAS's cblas_sgemm,
// linked as libblas.so.3 (Debian's alternative points it at OpenBLAS when
// libopenblas0 is installed, as scripts/deps.sh has it; the same library
// libtorch's products go through).
//
// Chosen by measurement on the engine's shapes, one thread, the 2-core
// AMD EPYC development machine (OpenBLAS 0.3.21 running its "Cooperlake"
// kernels), best of 7 (µs; GFLOP/s):
//
//   m × n × k      OpenBLAS x·wᵀ   AVX2+FMA dot   OpenBLAS x·w    AVX2+FMA 4×16   OpenBLAS xᵀ·w
//   64×64×64        5.3 (100)      16.7 (31)       5.3 (100)       8.0 (65)       4.7 (112)
//   256×64×64      22.5 (93)       82.3 (26)      22.1 (95)       19.5 (108)     22.3 (94)
//   512×64×64      44.1 (95)      171.8 (24)      43.7 (96)       38.9 (108)     45.3 (93)
//   64×64×17        2.0 (69)        7.9 (18)       1.4 (101)       1.4 (101)      1.4 (99)
//   64×6×64         0.75 (66)       2.0 (25)       0.75 (65)      15.5 (3)        0.64 (77)
//   4×64×64         0.50 (65)       1.3 (25)       0.34 (98)       0.33 (99)      0.34 (98)
//   512×512×512  2597 (103)      13444 (20)     2602 (103)      4316 (62)      2627 (102)
//
// A hand-written AVX2 kernel (a 4×16 register block) equals OpenBLAS only
// where both dimensions are multiples of its block and loses elsewhere;
// OpenBLAS's small-matrix paths are within a few percent of its 512³ rate
// from 64 rows on. So no SIMD of our own here (and no dispatch to keep):
// one library call per product.

#include "gemm.hpp"

#include <cblas.h>

namespace coral::learners::fused::detail {

namespace {
int i(std::size_t v) noexcept { return static_cast<int>(v); }
}  // namespace

void gemm_nt(std::size_t m, std::size_t n, std::size_t k, const float* a, const float* b, float* c,
             bool accumulate) noexcept {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, i(m), i(n), i(k), 1.0f, a, i(k), b, i(k),
              accumulate ? 1.0f : 0.0f, c, i(n));
}

void gemm_nn(std::size_t m, std::size_t n, std::size_t k, const float* a, const float* b, float* c) noexcept {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, i(m), i(n), i(k), 1.0f, a, i(k), b, i(n), 0.0f, c, i(n));
}

void gemm_tn(std::size_t m, std::size_t n, std::size_t k, const float* a, const float* b, float* c) noexcept {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, i(m), i(n), i(k), 1.0f, a, i(m), b, i(n), 0.0f, c, i(n));
}

}  // namespace coral::learners::fused::detail
