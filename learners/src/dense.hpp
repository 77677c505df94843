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

#include "coral/learners/network.hpp"
#include "coral/learners/tanh_kernel.hpp"

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

  /// y = W x + b, then tanh if `squash`. Zero inputs are skipped (a ReLU
  /// layer's output is mostly zeros): adding w × 0 changes no sum.
  void apply(const float* x, float* y, bool squash) const noexcept {
    std::copy(bias.begin(), bias.end(), y);
    for (std::size_t i = 0; i < in; ++i) {
      const float xi = x[i];
      if (xi == 0.0f) continue;
      const float* w = weights_t.data() + i * out;
      for (std::size_t j = 0; j < out; ++j) y[j] += w[j] * xi;
    }
    if (squash) tanh_in_place(y, out);
  }
};

/// An MLP of dense layers with tanh between them (none after the last), or
/// ReLU where `relu` (after a convolution).
struct dense_mlp {
  std::vector<dense_layer> layers;
  bool relu = false;

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
  /// Runs the layers on `x` using the two scratch buffers (x may be `b`);
  /// returns the output (the activation after the last layer too when
  /// `squash_last`).
  const float* apply(const float* x, float* a, float* b, bool squash_last = false) const noexcept {
    const float* in = x;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      float* out = (l % 2 == 0) ? a : b;
      const bool activated = squash_last || l + 1 < layers.size();
      layers[l].apply(in, out, activated && !relu);
      if (activated && relu) {
        for (std::size_t j = 0; j < layers[l].out; ++j) out[j] = std::max(out[j], 0.0f);
      }
      in = out;
    }
    return in;
  }
};

/// One convolution (no padding, ReLU after it), torch's Conv2d weight
/// [out][in][k][k] reordered to [ky][kx][in][out], so that the inner loop
/// runs over contiguous outputs and vectorises. Grids are row-major with
/// the channel last (coral/learners/network.hpp's conv_spec).
struct dense_conv {
  std::size_t in_h = 0, in_w = 0, in_c = 0, out_c = 0, kernel = 0, stride = 1;
  std::vector<float> weights_t;  // [k][k][in][out]
  std::vector<float> bias;       // [out]

  [[nodiscard]] std::size_t out_h() const noexcept { return (in_h - kernel) / stride + 1; }
  [[nodiscard]] std::size_t out_w() const noexcept { return (in_w - kernel) / stride + 1; }
  [[nodiscard]] std::size_t in_size() const noexcept { return in_h * in_w * in_c; }
  [[nodiscard]] std::size_t out_size() const noexcept { return out_h() * out_w() * out_c; }

  /// Loads a layer over an h × w × c grid from torch's layout; returns the floats read.
  std::size_t load(std::size_t h, std::size_t w, std::size_t c, const conv_layer_spec& spec, const float* flat) {
    in_h = h;
    in_w = w;
    in_c = c;
    out_c = spec.channels;
    kernel = spec.kernel;
    stride = spec.stride;
    const std::size_t K = kernel, O = out_c;
    weights_t.resize(K * K * c * O);
    for (std::size_t o = 0; o < O; ++o) {
      for (std::size_t i = 0; i < c; ++i) {
        for (std::size_t ky = 0; ky < K; ++ky) {
          for (std::size_t kx = 0; kx < K; ++kx) {
            weights_t[((ky * K + kx) * c + i) * O + o] = flat[((o * c + i) * K + ky) * K + kx];
          }
        }
      }
    }
    const float* b = flat + O * c * K * K;
    bias.assign(b, b + O);
    return O * c * K * K + O;
  }

  /// y [out_h][out_w][out_c] = ReLU(the convolution of x + bias).
  void apply(const float* x, float* y) const noexcept {
    const std::size_t K = kernel, C = in_c, O = out_c, oh = out_h(), ow = out_w();
    for (std::size_t oy = 0; oy < oh; ++oy) {
      for (std::size_t ox = 0; ox < ow; ++ox) {
        float* out = y + (oy * ow + ox) * O;
        std::copy(bias.begin(), bias.end(), out);
        for (std::size_t ky = 0; ky < K; ++ky) {
          for (std::size_t kx = 0; kx < K; ++kx) {
            const float* cell = x + ((oy * stride + ky) * in_w + ox * stride + kx) * C;
            const float* w = weights_t.data() + (ky * K + kx) * C * O;
            for (std::size_t i = 0; i < C; ++i) {
              const float v = cell[i];
              if (v == 0.0f) continue;  // grids of object channels are mostly empty
              const float* wi = w + i * O;
              for (std::size_t o = 0; o < O; ++o) out[o] += wi[o] * v;
            }
          }
        }
        for (std::size_t o = 0; o < O; ++o) out[o] = std::max(out[o], 0.0f);
      }
    }
  }
};

/// The layers before a network's heads or LSTM, as the acting side runs
/// them: convolutions (none for a flat input), then dense layers (ReLU after
/// a convolution, tanh otherwise). fused::encoder's acting twin.
struct dense_encoder {
  std::vector<dense_conv> conv;
  dense_mlp dense;

  /// Whether it has no layers (the input goes on as it is).
  [[nodiscard]] bool empty() const noexcept { return conv.empty() && dense.layers.empty(); }

  /// Loads the convolutions of `c` (none if it has none) and the dense
  /// layers of `widths` (widths[0]: their input; one element: none) from
  /// flat weights in torch's order; returns the floats read.
  std::size_t load_flat(std::span<const float> flat, const conv_spec& c, std::span<const std::size_t> widths) {
    conv.resize(c.layers.size());
    std::size_t at = 0, h = c.height, w = c.width, ch = c.channels;
    for (std::size_t l = 0; l < c.layers.size(); ++l) {
      at += conv[l].load(h, w, ch, c.layers[l], flat.data() + at);
      h = conv[l].out_h();
      w = conv[l].out_w();
      ch = conv[l].out_c;
    }
    dense.relu = !c.empty();
    if (widths.size() > 1) {
      at += dense.load_flat(flat.subspan(at), widths);
    } else {
      dense.layers.clear();
    }
    return at;
  }

  [[nodiscard]] std::size_t widest() const noexcept {
    std::size_t w = dense.widest();
    for (const auto& l : conv) w = std::max({w, l.in_size(), l.out_size()});
    return w;
  }

  /// Runs it on `x` with the two scratch buffers (widest() floats each);
  /// returns the output: in one of them, or `x` itself without layers.
  /// The dense layers' activation follows the last one too unless
  /// `activate_last` is false (a Q-network's head).
  const float* apply(const float* x, float* a, float* b, bool activate_last = true) const noexcept {
    const float* in = x;
    for (std::size_t l = 0; l < conv.size(); ++l) {
      float* out = (l % 2 == 0) ? a : b;
      conv[l].apply(in, out);
      in = out;
    }
    if (dense.layers.empty()) return in;
    // The dense layers' first output goes to the buffer their input is not in.
    return in == a ? dense.apply(in, b, a, activate_last) : dense.apply(in, a, b, activate_last);
  }
};

/// One LSTM cell (torch's LSTMCell: gates i, f, g, o in that order),
/// weights transposed to [in][4H] and [H][4H] like dense_layer's.
struct dense_lstm {
  std::size_t in = 0;
  std::size_t hidden = 0;
  std::vector<float> input_t;   // in × 4H
  std::vector<float> hidden_t;  // H × 4H
  std::vector<float> bias;      // 4H: bias_ih + bias_hh

  /// Loads torch's layout: weight_ih [4H][in], weight_hh [4H][H], bias_ih and bias_hh [4H].
  void load(std::size_t in_dim, std::size_t h_dim, const float* w_ih, const float* w_hh, const float* b_ih,
            const float* b_hh) {
    in = in_dim;
    hidden = h_dim;
    const std::size_t g = 4 * hidden;
    input_t.resize(in * g);
    hidden_t.resize(hidden * g);
    bias.resize(g);
    for (std::size_t j = 0; j < g; ++j) {
      bias[j] = b_ih[j] + b_hh[j];
      for (std::size_t i = 0; i < in; ++i) input_t[i * g + j] = w_ih[j * in + i];
      for (std::size_t i = 0; i < hidden; ++i) hidden_t[i * g + j] = w_hh[j * hidden + i];
    }
  }

  /// One step: reads `x` (in floats) and the state `h`, `c` (hidden floats
  /// each), writes the new state in place; `gates` is 4H floats of scratch.
  void step(const float* x, float* h, float* c, float* gates) const noexcept {
    const std::size_t H = hidden, g = 4 * H;
    std::copy(bias.begin(), bias.end(), gates);
    for (std::size_t i = 0; i < in; ++i) {
      const float xi = x[i];
      const float* w = input_t.data() + i * g;
      for (std::size_t j = 0; j < g; ++j) gates[j] += w[j] * xi;
    }
    for (std::size_t i = 0; i < H; ++i) {
      const float hi = h[i];
      const float* w = hidden_t.data() + i * g;
      for (std::size_t j = 0; j < g; ++j) gates[j] += w[j] * hi;
    }
    const auto sigmoid = [](float v) { return 1.0f / (1.0f + std::exp(-v)); };
    // The g gates' tanh, then the new cell state; its tanh then goes where
    // the g gates were.
    float* g_gates = gates + 2 * H;
    tanh_in_place(g_gates, H);
    for (std::size_t j = 0; j < H; ++j) {
      c[j] = sigmoid(gates[H + j]) * c[j] + sigmoid(gates[j]) * g_gates[j];
      g_gates[j] = c[j];
    }
    tanh_in_place(g_gates, H);
    for (std::size_t j = 0; j < H; ++j) h[j] = sigmoid(gates[3 * H + j]) * g_gates[j];
  }
};

/// A recurrent trunk as the acting side runs it: the encoder (its
/// activation after every layer) and the LSTM cell.
struct dense_trunk {
  dense_encoder encoder;
  dense_lstm cell;

  /// One step of a row: encodes `x`, advances its state `h`, `c` in place;
  /// `a`, `b` are scratch of the encoder's widest layer, `gates` 4H floats.
  void step(const float* x, float* h, float* c, float* a, float* b, float* gates) const noexcept {
    cell.step(encoder.apply(x, a, b), h, c, gates);
  }
};

/// Float count of an MLP of these widths (weights and biases).
[[nodiscard]] inline std::size_t dense_parameter_count(std::span<const std::size_t> widths) noexcept {
  std::size_t n = 0;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) n += widths[l] * widths[l + 1] + widths[l + 1];
  return n;
}

}  // namespace coral::learners::detail
