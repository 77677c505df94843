// Clipping and Adam over flat buffers (coral/learners/fused/optim.hpp);
// the torch learners' flat_adam and clip_grad_norm (learners/src/adam.hpp)
// call the same functions, so the two backends agree to the bit.
//
// Compiled with -fno-math-errno (learners/CMakeLists.txt): otherwise
// std::sqrt keeps a branch to the library for errno on a negative
// argument, which the update never has, and the loop stays scalar. The
// AVX2 clones use no FMA (and the compiler contracts nothing without it):
// the same operations, eight floats at a time, the same bits as the
// baseline. Picked once per call by host_cpu_features().

#include "coral/learners/fused/optim.hpp"

#include <cmath>

#include "coral/core/cpu_features.hpp"

namespace coral::learners::fused {
namespace {

[[gnu::always_inline]] inline void adam_loop(float* params, const float* grads, float* m, float* v, std::size_t n,
                                             float step_size, float inv_c2, float eps) noexcept {
  constexpr float b1 = 0.9f;
  constexpr float b2 = 0.999f;
  for (std::size_t j = 0; j < n; ++j) {
    m[j] = b1 * m[j] + (1.0f - b1) * grads[j];
    v[j] = b2 * v[j] + (1.0f - b2) * grads[j] * grads[j];
    params[j] -= step_size * m[j] / (std::sqrt(v[j] * inv_c2) + eps);
  }
}

// Whole groups of eight, element k of a group to lane k.
[[gnu::always_inline]] inline void squares_loop(double* lanes, const float* x, std::size_t groups) noexcept {
  for (std::size_t i = 0; i < groups; ++i) {
    for (std::size_t k = 0; k < 8; ++k) {
      const auto d = static_cast<double>(x[8 * i + k]);
      lanes[k] += d * d;
    }
  }
}

[[gnu::always_inline]] inline void scale_loop(float* x, std::size_t n, double coef) noexcept {
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<double>(x[i]) * coef);
}

void adam_baseline(float* p, const float* g, float* m, float* v, std::size_t n, float s, float c, float e) noexcept {
  adam_loop(p, g, m, v, n, s, c, e);
}
void squares_baseline(double* lanes, const float* x, std::size_t groups) noexcept { squares_loop(lanes, x, groups); }
void scale_baseline(float* x, std::size_t n, double coef) noexcept { scale_loop(x, n, coef); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CORAL_OPTIM_AVX2 1
[[gnu::target("avx2")]] void adam_avx2(float* p, const float* g, float* m, float* v, std::size_t n, float s, float c,
                                       float e) noexcept {
  adam_loop(p, g, m, v, n, s, c, e);
}
[[gnu::target("avx2")]] void squares_avx2(double* lanes, const float* x, std::size_t groups) noexcept {
  squares_loop(lanes, x, groups);
}
[[gnu::target("avx2")]] void scale_avx2(float* x, std::size_t n, double coef) noexcept { scale_loop(x, n, coef); }
#endif

bool use_avx2() noexcept {
#if defined(CORAL_OPTIM_AVX2)
  return coral::host_cpu_features().avx2;
#else
  return false;
#endif
}

}  // namespace

void square_sum::add(std::span<const float> values) noexcept {
  const float* x = values.data();
  std::size_t n = values.size();
  // Up to the next multiple of eight one by one, then whole groups, then the rest.
  while (n > 0 && count_ % 8 != 0) {
    const auto d = static_cast<double>(*x++);
    lanes_[count_++ % 8] += d * d;
    --n;
  }
  const std::size_t groups = n / 8;
#if defined(CORAL_OPTIM_AVX2)
  if (use_avx2()) {
    squares_avx2(lanes_, x, groups);
  } else {
    squares_baseline(lanes_, x, groups);
  }
#else
  squares_baseline(lanes_, x, groups);
#endif
  x += 8 * groups;
  count_ += 8 * groups;
  for (std::size_t i = 0; i < n % 8; ++i) {
    const auto d = static_cast<double>(x[i]);
    lanes_[count_++ % 8] += d * d;
  }
}

double square_sum::total() const noexcept {
  double sum = 0;
  for (const double lane : lanes_) sum += lane;
  return sum;
}

void scale(std::span<float> values, double coef) noexcept {
#if defined(CORAL_OPTIM_AVX2)
  if (use_avx2()) return scale_avx2(values.data(), values.size(), coef);
#endif
  scale_baseline(values.data(), values.size(), coef);
}

double clip_grad_norm(std::span<float> grads, double max_norm) noexcept {
  square_sum squares;
  squares.add(grads);
  const double norm = std::sqrt(squares.total());
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1.0) scale(grads, coef);
  return norm;
}

void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n, std::uint64_t step, double lr,
                 double epsilon) noexcept {
  const double c1 = 1.0 - std::pow(0.9, static_cast<double>(step));
  const double c2 = 1.0 - std::pow(0.999, static_cast<double>(step));
  const auto step_size = static_cast<float>(lr / c1);
  const auto inv_c2 = static_cast<float>(1.0 / c2);
  const auto eps = static_cast<float>(epsilon);
#if defined(CORAL_OPTIM_AVX2)
  if (use_avx2()) return adam_avx2(params, grads, m, v, n, step_size, inv_c2, eps);
#endif
  adam_baseline(params, grads, m, v, n, step_size, inv_c2, eps);
}

void adam::step(std::span<float> params, std::span<const float> grads, double lr) noexcept {
  ++steps;
  adam_update(params.data(), grads.data(), m.data(), v.data(), params.size(), steps, lr, epsilon);
}

}  // namespace coral::learners::fused
