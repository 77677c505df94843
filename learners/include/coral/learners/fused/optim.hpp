#pragma once
/// \file
/// Gradient-norm clipping and Adam over one flat parameter buffer and one
/// flat gradient buffer (torch-free), with the float arithmetic of the
/// torch learners' optimiser (learners/src/adam.hpp) step for step, so that
/// either backend's Adam state is the other's.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace coral::learners::fused {

/// A sum of squares of floats, in double, fed one span or many: element i
/// of the whole stream goes to partial sum i mod 8, the partial sums added
/// in order at the end. Any split of the same floats into spans gives the
/// same bits, so the torch learners' clipping (per tensor) and the fused
/// engine's (one flat buffer) agree exactly; eight independent sums
/// vectorise where one serial sum waits on each addition.
class square_sum {
 public:
  /// Adds the squares of `values`.
  void add(std::span<const float> values) noexcept;
  /// The sum so far.
  [[nodiscard]] double total() const noexcept;

 private:
  double lanes_[8] = {};
  std::size_t count_ = 0;
};

/// values[i] = float(double(values[i]) × coef): clipping's scaling.
void scale(std::span<float> values, double coef) noexcept;

/// Scales `grads` so that their 2-norm is at most `max_norm`, as
/// torch::nn::utils::clip_grad_norm_ does: the norm from a square_sum,
/// coef = max_norm / (norm + 1e-6), applied by scale() only when below 1.
/// Returns the norm before.
double clip_grad_norm(std::span<float> grads, double max_norm) noexcept;

/// Adam's update of `n` floats at step `step` (1 for the first): the
/// moments `m`, `v` and then `params` from `grads`. The arithmetic both
/// backends' Adam run (adam below, and the torch learners' flat_adam in
/// learners/src/adam.hpp), so that either's state is the other's.
void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n, std::uint64_t step, double lr,
                 double epsilon) noexcept;

/// Adam (Kingma and Ba) with bias correction, β = (0.9, 0.999).
struct adam {
  std::vector<float> m;    ///< first moments, flat in parameter order
  std::vector<float> v;    ///< second moments
  std::uint64_t steps = 0; ///< steps taken (the bias correction's t)
  double epsilon = 1e-5;   ///< added to the root of the second moment

  /// Zero moments for `parameters` floats.
  adam(std::size_t parameters, double eps) : m(parameters), v(parameters), epsilon(eps) {}

  /// One step of size `lr`: params and grads as long as the moments.
  void step(std::span<float> params, std::span<const float> grads, double lr) noexcept;
};

}  // namespace coral::learners::fused
