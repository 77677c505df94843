#pragma once
// Private: small dense MLP kernels the acting policies run on the CPU, row by
// row (torch-free). At the batch sizes a batcher forms, torch's per-operator
// dispatch and Debian's reference BLAS cost more than the arithmetic; these
// allocate nothing and use no thread pool.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

namespace coral::learners::detail {

/// One dense layer: weights transposed to [in][out], so that the inner loop
/// runs over contiguous outputs and vectorises.
struct dense_layer {
  std::size_t in = 0;
  std::size_t out = 0;
  std::vector<float> weights_t;  // in × out
  std::vector<float> bias;       // out

  /// Loads a layer from torch's Linear layout: `weight` [out][in], `bias` [out].
  void load(std::size_t in_dim, std::size_t out_dim, const float* weight, const float* b) {
    in = in_dim;
    out = out_dim;
    weights_t.resize(in * out);
    bias.assign(b, b + out);
    for (std::size_t j = 0; j < out; ++j) {
      for (std::size_t i = 0; i < in; ++i) weights_t[i * out + j] = weight[j * in + i];
    }
  }

  /// y = W x + b, then tanh if `squash`.
  void apply(const float* x, float* y, bool squash) const noexcept {
    std::copy(bias.begin(), bias.end(), y);
    for (std::size_t i = 0; i < in; ++i) {
      const float xi = x[i];
      const float* w = weights_t.data() + i * out;
      for (std::size_t j = 0; j < out; ++j) y[j] += w[j] * xi;
    }
    if (squash) {
      for (std::size_t j = 0; j < out; ++j) y[j] = std::tanh(y[j]);
    }
  }
};

/// An MLP of dense layers with tanh between them (none after the last).
struct dense_mlp {
  std::vector<dense_layer> layers;

  /// Loads the layers of widths[0] → widths[1] → ... from flat weights in
  /// torch's order (per layer: weight [out][in], then bias); returns the
  /// number of floats read. The caller checks the size.
  std::size_t load_flat(std::span<const float> flat, std::span<const std::size_t> widths) {
    layers.resize(widths.size() - 1);
    std::size_t at = 0;
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
      const std::size_t in = widths[l], out = widths[l + 1];
      layers[l].load(in, out, flat.data() + at, flat.data() + at + in * out);
      at += in * out + out;
    }
    return at;
  }
  [[nodiscard]] std::size_t widest() const noexcept {
    std::size_t w = 0;
    for (const auto& l : layers) w = std::max({w, l.in, l.out});
    return w;
  }
  /// Runs the layers on `x` using the two scratch buffers; returns the output.
  const float* apply(const float* x, float* a, float* b) const noexcept {
    const float* in = x;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      float* out = (l % 2 == 0) ? a : b;
      layers[l].apply(in, out, l + 1 < layers.size());
      in = out;
    }
    return in;
  }
};

/// Float count of an MLP of these widths (weights and biases).
[[nodiscard]] inline std::size_t dense_parameter_count(std::span<const std::size_t> widths) noexcept {
  std::size_t n = 0;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) n += widths[l] * widths[l + 1] + widths[l + 1];
  return n;
}

}  // namespace coral::learners::detail
