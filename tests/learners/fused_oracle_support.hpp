#pragma once
// The fused engine's oracle tests' comparison (fused_*oracle_test.cpp):
// torch tensors' floats, and the tolerance every one of them uses. Include
// after torch and Catch2 (each test file undefines torch's CHECK first).

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

namespace coral::test {

// |a − b| ≤ 1e-5 max(|a|, |b|) + floor, elementwise; reports the worst.
//
// The floor is 1e-5 of the largest magnitude in the compared block (one
// parameter's gradient, the actor's output), as an absolute slack. A
// gradient element is a sum over the minibatch's rows of terms of either
// sign whose magnitudes add up to many times the result; float32 rounds
// each term (by about 6e-8 of it, in orders OpenBLAS and torch choose
// differently), so where they nearly cancel, both backends stand off the
// exact value by far more than 1e-5 of the small result, though not of
// the block's scale. Measured on the Gaussian 256-row case: one log std's
// gradient is 0.00101079 in a float64 twin, 0.00101074 in torch's float32,
// 0.00101088 here, in a block whose largest element is 0.042: apart by
// 1.4e-7, 1.4e-4 relative, 3.3e-6 of the block.
inline void require_close(std::span<const float> got, std::span<const float> want, const std::string& what) {
  REQUIRE(got.size() == want.size());
  double scale = 0;
  for (const float w : want) scale = std::max(scale, static_cast<double>(std::fabs(w)));
  const double floor = 1e-5 * scale;
  std::size_t worst = 0;
  double worst_excess = -1e300;
  bool ok = true;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], b = want[i];
    const double allowed = 1e-5 * std::max(std::fabs(a), std::fabs(b)) + floor;
    const double excess = std::fabs(a - b) - allowed;
    if (!(excess <= 0)) ok = false;
    if (excess > worst_excess || std::isnan(excess)) {
      worst_excess = std::isnan(excess) ? 1e300 : excess;
      worst = i;
    }
  }
  INFO(what << ": element " << worst << " of " << got.size() << ": fused " << got[worst] << ", torch "
            << want[worst] << " (scale " << scale << ")");
  CHECK(ok);
}

/// The floats of a tensor, in row-major order.
inline std::vector<float> floats_of(const torch::Tensor& t) {
  const auto c = t.detach().contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

}  // namespace coral::test
