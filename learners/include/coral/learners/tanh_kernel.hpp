#pragma once
/// \file
/// tanh of many floats at once, for the acting side's dense layers and LSTM
/// cell (learners/src/dense.hpp), where glibc's tanhf, one value at a time
/// through expm1f, was about 8% of a default `coral train` run's samples.
///
/// Within 1.5 ulp of the exact tanh (1.33 at worst, near the switch between
/// the two forms below; tests/learners/tanh_kernel_test.cpp measures it
/// against tanh in double over every 97th float up to 10 and every float
/// near the switch, and requires 2). The same bits with AVX2 and without (the file's AVX2 function
/// has no FMA, and the compiler contracts nothing without it). -0 stays -0,
/// +-inf gives +-1, NaN stays NaN.
///
/// The method, for a = |x| (at most 10: tanh rounds to 1 in float from there):
/// below 0.625, a + a^3 q(a^2) with q of degree 5; from 0.625,
/// 1 - 2 / (e^(2a) + 1), e^(2a) = 2^n e^r with 2a = n ln 2 + r, r in
/// [-ln2/2, ln2/2] by Cody and Waite's two-part ln 2, e^r = 1 + r + r^2 s(r)
/// with s of degree 5; the sign put back last. Both forms are computed for
/// every value and one kept, so that the loop has no branch and
/// vectorises. The coefficients are least-squares fits on Chebyshev nodes
/// rounded to float.
///
/// Torch-free; in coral::training so that the sanitizer builds test it.

#include <cstddef>

namespace coral::learners {

/// y[i] = tanh(y[i]) for i < n.
void tanh_in_place(float* y, std::size_t n) noexcept;

}  // namespace coral::learners
