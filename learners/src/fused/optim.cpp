// Clipping and Adam over flat buffers (coral/learners/fused/optim.hpp).
// clip_grad_norm: the operations, in the same float and double types, of
// learners/src/adam.hpp's, so that the two give the same bits on the same
// gradients (neither is compiled with FMA contraction available); Adam's
// update is one function both call.

#include "coral/learners/fused/optim.hpp"

#include <cmath>

namespace coral::learners::fused {

double clip_grad_norm(std::span<float> grads, double max_norm) noexcept {
  double sum = 0;
  for (const float g : grads) sum += static_cast<double>(g) * static_cast<double>(g);
  const double norm = std::sqrt(sum);
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1.0) {
    for (float& g : grads) g = static_cast<float>(static_cast<double>(g) * coef);
  }
  return norm;
}

void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n, std::uint64_t step, double lr,
                 double epsilon) noexcept {
  constexpr float b1 = 0.9f;
  constexpr float b2 = 0.999f;
  const double c1 = 1.0 - std::pow(0.9, static_cast<double>(step));
  const double c2 = 1.0 - std::pow(0.999, static_cast<double>(step));
  const auto step_size = static_cast<float>(lr / c1);
  const auto inv_c2 = static_cast<float>(1.0 / c2);
  const auto eps = static_cast<float>(epsilon);
  for (std::size_t j = 0; j < n; ++j) {
    m[j] = b1 * m[j] + (1.0f - b1) * grads[j];
    v[j] = b2 * v[j] + (1.0f - b2) * grads[j] * grads[j];
    params[j] -= step_size * m[j] / (std::sqrt(v[j] * inv_c2) + eps);
  }
}

void adam::step(std::span<float> params, std::span<const float> grads, double lr) noexcept {
  ++steps;
  adam_update(params.data(), grads.data(), m.data(), v.data(), params.size(), steps, lr, epsilon);
}

}  // namespace coral::learners::fused
