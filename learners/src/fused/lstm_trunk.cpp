// The recurrent trunk on the fused engine (coral/learners/fused/lstm_trunk.hpp).
//
// Forward: the encoder and the input's part of every gate (both biases in)
// for all steps at once, one product each; then per step one product for
// h's part and the cell's elementwise rest. Backward: per step, the
// gates' gradients and one product for h's gradient to the step before;
// then the weights' gradients as one product over all steps each, and the
// encoder's backward over all steps at once. The same scheme as the torch
// twin's lstm_recurrence node (learners/src/actor_critic.cpp).

#include "coral/learners/fused/lstm_trunk.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/core/rng.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/fused/actor_critic.hpp"
#include "gemm.hpp"

namespace coral::learners::fused {
lstm_trunk::lstm_trunk(std::size_t in, const std::vector<std::size_t>& hidden, std::size_t width, std::size_t offset,
                       std::size_t max_rows, std::size_t max_steps, const conv_spec& conv)
    : width_(width),
      features_(in),
      max_rows_(max_rows),
      max_steps_(max_steps),
      encoded_(!hidden.empty() || !conv.empty()) {
  std::size_t at = offset;
  if (encoded_) {
    encoder_ = encoder(in, conv, hidden, conv.empty() ? activation::tanh : activation::relu, offset,
                       max_rows * max_steps);
    features_ = encoder_.output_dim();
    at += encoder_.parameter_count();
  }
  const std::size_t g = 4 * width;
  w_ih_ = at;
  w_hh_ = w_ih_ + g * features_;
  b_ih_ = w_hh_ + g * width;
  b_hh_ = b_ih_ + g;
  count_ = b_hh_ + g - offset;
  const std::size_t n = max_rows * max_steps;
  bias_.resize(g);
  w_hh_t_.resize(width * g);
  hh_.resize(max_rows * g);
  gates_.resize(n * g);
  h_in_.resize(n * width);
  c_in_.resize(n * width);
  tanh_c_.resize(n * width);
  d_gates_.resize(n * g);
  dh_.resize(max_rows * width);
  dc_.resize(max_rows * width);
  d_features_.resize(encoded_ ? n * features_ : 0);
}

void lstm_trunk::forward(const float* params, const float* x, const float* keep, const float* h0, const float* c0,
                         std::size_t rows, std::size_t steps, float* hs, float* cs, bool for_backward) {
  if (rows > max_rows_ || steps > max_steps_) {
    throw usage_error(fmt::format(fmt::runtime(errors::fused_too_many_rows), rows * steps, max_rows_ * max_steps_));
  }
  rows_ = rows;
  steps_ = steps;
  x_ = x;
  keep_ = keep;
  const std::size_t H = width_, g = 4 * H, n = rows * steps;
  const float* features = encoded_ ? encoder_.forward(params, x, n) : x;
  features_out_ = features;
  for (std::size_t j = 0; j < g; ++j) bias_[j] = params[b_ih_ + j] + params[b_hh_ + j];
  // The input's part of every step's gates, with both biases.
  for (std::size_t r = 0; r < n; ++r) std::copy_n(bias_.data(), g, gates_.data() + r * g);
  detail::gemm_nt(n, g, features_, features, params + w_ih_, gates_.data(), true);
  // W_hh transposed once, [H][4H]: a step's product x·W is then OpenBLAS's
  // faster case (32 x 256 x 64, one thread: 26 us as x·W into a fresh
  // buffer, 46 us as x·Wᵀ added to the gates, measured on the loaded
  // 2-core machine).
  for (std::size_t j = 0; j < g; ++j) {
    for (std::size_t k = 0; k < H; ++k) w_hh_t_[k * g + j] = params[w_hh_ + j * H + k];
  }
  for (std::size_t t = 0; t < steps; ++t) {
    const float* h_prev = t == 0 ? h0 : hs + (t - 1) * rows * H;
    const float* c_prev = t == 0 ? c0 : cs + (t - 1) * rows * H;
    float* hi = h_in_.data() + t * rows * H;
    float* ci = c_in_.data() + t * rows * H;
    for (std::size_t b = 0; b < rows; ++b) {
      const float k = keep[t * rows + b];
      for (std::size_t j = 0; j < H; ++j) {
        hi[b * H + j] = k * h_prev[b * H + j];
        ci[b * H + j] = k * c_prev[b * H + j];
      }
    }
    float* a = gates_.data() + t * rows * g;
    detail::gemm_nn(rows, g, H, hi, w_hh_t_.data(), hh_.data());
    for (std::size_t e = 0; e < rows * g; ++e) a[e] += hh_[e];
    float* tc = tanh_c_.data() + t * rows * H;
    float* c = cs + t * rows * H;
    float* h = hs + t * rows * H;
    for (std::size_t b = 0; b < rows; ++b) {
      float* row = a + b * g;
      sigmoid_in_place(row, 2 * H);  // i, f
      tanh_forward(row + 2 * H, H);  // g
      sigmoid_in_place(row + 3 * H, H);  // o
      for (std::size_t j = 0; j < H; ++j) c[b * H + j] = row[H + j] * ci[b * H + j] + row[j] * row[2 * H + j];
    }
    std::copy_n(c, rows * H, tc);
    tanh_forward(tc, rows * H);
    for (std::size_t b = 0; b < rows; ++b) {
      const float* row = a + b * g;
      for (std::size_t j = 0; j < H; ++j) h[b * H + j] = row[3 * H + j] * tc[b * H + j];
    }
  }
  if (!for_backward) x_ = nullptr;
}

void lstm_trunk::backward(const float* params, float* grads, const float* d_hs, const float* d_cs) noexcept {
  const std::size_t rows = rows_, steps = steps_, H = width_, g = 4 * H, n = rows * steps;
  std::fill(dh_.begin(), dh_.begin() + static_cast<std::ptrdiff_t>(rows * H), 0.0f);
  std::fill(dc_.begin(), dc_.begin() + static_cast<std::ptrdiff_t>(rows * H), 0.0f);
  for (std::size_t t = steps; t-- > 0;) {
    const float* a = gates_.data() + t * rows * g;
    const float* tc = tanh_c_.data() + t * rows * H;
    const float* ci = c_in_.data() + t * rows * H;
    float* dg = d_gates_.data() + t * rows * g;
    bool reset = false;
    for (std::size_t b = 0; b < rows; ++b) {
      const float k = keep_[t * rows + b];
      reset = reset || k != 1.0f;
      const float* row = a + b * g;
      float* drow = dg + b * g;
      for (std::size_t j = 0; j < H; ++j) {
        const std::size_t e = b * H + j, at = t * rows * H + e;
        const float i = row[j], f = row[H + j], gg = row[2 * H + j], o = row[3 * H + j];
        const float dh = d_hs[at] + dh_[e];
        const float dc = (d_cs != nullptr ? d_cs[at] : 0.0f) + dc_[e] + dh * o * (1.0f - tc[e] * tc[e]);
        drow[j] = dc * gg * i * (1.0f - i);
        drow[H + j] = dc * ci[e] * f * (1.0f - f);
        drow[2 * H + j] = dc * i * (1.0f - gg * gg);
        drow[3 * H + j] = dh * tc[e] * o * (1.0f - o);
        dc_[e] = dc * f * k;
      }
    }
    // h's gradient to the step before: through W_hh, times the keep mask.
    detail::gemm_nn(rows, H, g, dg, params + w_hh_, dh_.data());
    if (reset) {
      for (std::size_t b = 0; b < rows; ++b) {
        const float k = keep_[t * rows + b];
        for (std::size_t j = 0; j < H; ++j) dh_[b * H + j] *= k;
      }
    }
  }
  // The weights' and biases' gradients over all steps at once.
  const float* features = features_out_;
  detail::gemm_tn(g, H, n, d_gates_.data(), h_in_.data(), grads + w_hh_);
  detail::gemm_tn(g, features_, n, d_gates_.data(), features, grads + w_ih_);
  float* db = grads + b_ih_;
  std::fill_n(db, g, 0.0f);
  for (std::size_t r = 0; r < n; ++r) {
    const float* row = d_gates_.data() + r * g;
    for (std::size_t j = 0; j < g; ++j) db[j] += row[j];
  }
  std::copy_n(db, g, grads + b_hh_);
  if (encoded_) {
    detail::gemm_nn(n, features_, g, d_gates_.data(), params + w_ih_, d_features_.data());
    encoder_.backward(params, grads, d_features_.data(), n);
  }
}

void init_lstm_trunk(float* flat, std::size_t offset, std::size_t in, const std::vector<std::size_t>& hidden,
                     std::size_t width, std::uint64_t seed, std::uint64_t& stream, const conv_spec& conv) {
  const lstm_trunk shape(in, hidden, width, offset, 0, 0, conv);
  auto fill = [&](std::size_t at, std::size_t rows, std::size_t cols, double gain) {
    orthogonal(flat + at, rows, cols, gain, coral::rng(coral::env_seed{seed, stream++})());
  };
  std::fill_n(flat + offset, shape.count_, 0.0f);
  for (const auto& layer : shape.encoder_.convolutions().layers()) {
    fill(layer.offset, layer.out_c, layer.patch(), std::sqrt(2.0));
  }
  for (const auto& layer : shape.encoder_.dense().layers) fill(layer.offset, layer.out, layer.in, std::sqrt(2.0));
  fill(shape.w_ih_, 4 * width, shape.features_, 1.0);
  fill(shape.w_hh_, 4 * width, width, 1.0);
}

}  // namespace coral::learners::fused
