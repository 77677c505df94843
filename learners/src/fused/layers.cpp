// The fused engine's layers (coral/learners/fused/layers.hpp).

#include "coral/learners/fused/layers.hpp"

#include <algorithm>

#include "coral/learners/tanh_kernel.hpp"
#include "gemm.hpp"

namespace coral::learners::fused {

void dense_forward(const dense_layer& layer, const float* params, const float* x, std::size_t rows, float* y) noexcept {
  const float* bias = params + layer.bias_offset();
  for (std::size_t r = 0; r < rows; ++r) std::copy_n(bias, layer.out, y + r * layer.out);
  detail::gemm_nt(rows, layer.out, layer.in, x, params + layer.offset, y, true);
}

void dense_backward(const dense_layer& layer, const float* params, float* grads, const float* x, const float* dy,
                    std::size_t rows, float* dx) noexcept {
  // d weight [out][in] = dyᵀ · x; d bias = dy's column sums.
  detail::gemm_tn(layer.out, layer.in, rows, dy, x, grads + layer.offset);
  float* db = grads + layer.bias_offset();
  std::fill_n(db, layer.out, 0.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = dy + r * layer.out;
    for (std::size_t j = 0; j < layer.out; ++j) db[j] += row[j];
  }
  if (dx != nullptr) detail::gemm_nn(rows, layer.in, layer.out, dy, params + layer.offset, dx);
}

void tanh_forward(float* y, std::size_t n) noexcept { tanh_in_place(y, n); }

void tanh_backward(const float* y, float* dy, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) dy[i] *= 1.0f - y[i] * y[i];
}

void relu_forward(float* y, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = std::max(y[i], 0.0f);
}

void relu_backward(const float* y, float* dy, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) dy[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

void activate(activation act, float* y, std::size_t n) noexcept {
  if (act == activation::relu) {
    relu_forward(y, n);
  } else {
    tanh_forward(y, n);
  }
}

void activate_backward(activation act, const float* y, float* dy, std::size_t n) noexcept {
  if (act == activation::relu) {
    relu_backward(y, dy, n);
  } else {
    tanh_backward(y, dy, n);
  }
}

mlp make_mlp(std::size_t in, const std::vector<std::size_t>& hidden, std::size_t out, std::size_t offset,
             std::size_t max_rows, activation act) {
  mlp net;
  net.max_rows = max_rows;
  net.act = act;
  std::size_t width = in, widest = in;
  auto add = [&](std::size_t to) {
    net.layers.push_back(dense_layer{width, to, offset});
    net.outputs.emplace_back(max_rows * to);
    offset += width * to + to;
    width = to;
    widest = std::max(widest, to);
  };
  for (auto h : hidden) add(h);
  add(out);
  net.delta_a.resize(max_rows * widest);
  net.delta_b.resize(max_rows * widest);
  return net;
}

std::size_t parameter_count(const mlp& net) noexcept {
  std::size_t n = 0;
  for (const auto& l : net.layers) n += l.size();
  return n;
}

const float* forward(mlp& net, const float* params, const float* x, std::size_t rows) noexcept {
  const float* in = x;
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    float* y = net.outputs[l].data();
    dense_forward(net.layers[l], params, in, rows, y);
    if (l + 1 < net.layers.size()) activate(net.act, y, rows * net.layers[l].out);
    in = y;
  }
  return in;
}

void backward(mlp& net, const float* params, float* grads, const float* x, const float* d_out, std::size_t rows,
              float* dx) noexcept {
  // `dy`: the gradient of layer l's output before its activation.
  const float* dy = d_out;
  for (std::size_t l = net.layers.size(); l-- > 0;) {
    const auto& layer = net.layers[l];
    const float* in = l == 0 ? x : net.outputs[l - 1].data();
    float* d_in = nullptr;
    if (l > 0) {
      d_in = (dy == net.delta_a.data()) ? net.delta_b.data() : net.delta_a.data();
    } else {
      d_in = dx;
    }
    dense_backward(layer, params, grads, in, dy, rows, d_in);
    if (l > 0) {
      activate_backward(net.act, in, d_in, rows * layer.in);
      dy = d_in;
    }
  }
}

}  // namespace coral::learners::fused
