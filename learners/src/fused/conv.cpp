// The fused engine's convolutions (coral/learners/fused/conv.hpp).
//
// A convolution as im2col and one GEMM: each output cell's window copied
// into a row of a patch matrix, then patches · weightᵀ for every cell of
// every row at once; backward is two GEMMs over the same patches (the
// weight's gradient dyᵀ · patches, the input's dy · weight, scattered back
// by col2im). Chosen over a direct loop by measurement on MinAtar's shape
// (bench/learners/conv_bench.cpp: 10 x 10 x C -> 16 channels, 3 x 3, the
// forward and the weights' gradients over 64, 512 and 1312 rows of 0/1
// grids with 5 % ones; the 2-core development machine, loaded): the
// direct loop (the weight reordered so that its inner loop vectorises over
// the 16 outputs) took 3.3-5.3x as long as im2col + sgemm for C = 4, 7 and
// 10, and 1.6-2.6x as long even when it skipped the grids' zero cells.

#include "coral/learners/fused/conv.hpp"

#include <algorithm>

#include "gemm.hpp"

namespace coral::learners::fused {

void im2col(const conv_layer& layer, const float* x, std::size_t rows, float* patches) noexcept {
  // A window's row of K cells is K × C contiguous floats of x: one copy each.
  const std::size_t K = layer.kernel, C = layer.in_c, W = layer.in_w, S = layer.stride;
  const std::size_t oh = layer.out_h(), ow = layer.out_w(), patch = layer.patch(), run = K * C;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = x + r * layer.in_size();
    for (std::size_t oy = 0; oy < oh; ++oy) {
      for (std::size_t ox = 0; ox < ow; ++ox) {
        float* dst = patches + ((r * oh + oy) * ow + ox) * patch;
        for (std::size_t ky = 0; ky < K; ++ky) std::copy_n(in + ((oy * S + ky) * W + ox * S) * C, run, dst + ky * run);
      }
    }
  }
}

void col2im(const conv_layer& layer, const float* d_patches, std::size_t rows, float* dx) noexcept {
  const std::size_t K = layer.kernel, C = layer.in_c, W = layer.in_w, S = layer.stride;
  const std::size_t oh = layer.out_h(), ow = layer.out_w(), patch = layer.patch(), run = K * C;
  std::fill_n(dx, rows * layer.in_size(), 0.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    float* in = dx + r * layer.in_size();
    for (std::size_t oy = 0; oy < oh; ++oy) {
      for (std::size_t ox = 0; ox < ow; ++ox) {
        const float* src = d_patches + ((r * oh + oy) * ow + ox) * patch;
        for (std::size_t ky = 0; ky < K; ++ky) {
          float* cells = in + ((oy * S + ky) * W + ox * S) * C;
          const float* from = src + ky * run;
          for (std::size_t i = 0; i < run; ++i) cells[i] += from[i];
        }
      }
    }
  }
}

namespace {

// torch's weight [out][c][ky][kx] to the patches' order [out][ky][kx][c],
// and back (`to_patches` false) for its gradient.
void reorder_weight(const conv_layer& layer, const float* from, float* to, bool to_patches) noexcept {
  const std::size_t K = layer.kernel, C = layer.in_c;
  for (std::size_t o = 0; o < layer.out_c; ++o) {
    for (std::size_t c = 0; c < C; ++c) {
      for (std::size_t k = 0; k < K * K; ++k) {
        const std::size_t torch_at = (o * C + c) * K * K + k, patch_at = (o * K * K + k) * C + c;
        if (to_patches) {
          to[patch_at] = from[torch_at];
        } else {
          to[torch_at] = from[patch_at];
        }
      }
    }
  }
}

}  // namespace

void conv_forward(const conv_layer& layer, const float* params, const float* x, std::size_t rows, float* patches,
                  float* weight, float* y) noexcept {
  const std::size_t cells = rows * layer.positions(), O = layer.out_c;
  im2col(layer, x, rows, patches);
  reorder_weight(layer, params + layer.offset, weight, true);
  const float* bias = params + layer.bias_offset();
  for (std::size_t i = 0; i < cells; ++i) std::copy_n(bias, O, y + i * O);
  detail::gemm_nt(cells, O, layer.patch(), patches, weight, y, true);
}

void conv_forward_reference(const conv_layer& layer, const float* params, const float* x, std::size_t rows,
                            float* y) noexcept {
  const std::size_t K = layer.kernel, C = layer.in_c, W = layer.in_w, S = layer.stride, O = layer.out_c;
  const std::size_t oh = layer.out_h(), ow = layer.out_w();
  const float* weight = params + layer.offset;
  const float* bias = params + layer.bias_offset();
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = x + r * layer.in_size();
    for (std::size_t oy = 0; oy < oh; ++oy) {
      for (std::size_t ox = 0; ox < ow; ++ox) {
        float* out = y + ((r * oh + oy) * ow + ox) * O;
        for (std::size_t o = 0; o < O; ++o) {
          float sum = bias[o];
          for (std::size_t c = 0; c < C; ++c) {
            for (std::size_t ky = 0; ky < K; ++ky) {
              for (std::size_t kx = 0; kx < K; ++kx) {
                sum += weight[((o * C + c) * K + ky) * K + kx] * in[((oy * S + ky) * W + ox * S + kx) * C + c];
              }
            }
          }
          out[o] = sum;
        }
      }
    }
  }
}

void conv_backward(const conv_layer& layer, float* grads, const float* patches, const float* dy, std::size_t rows,
                   float* weight, float* d_patches, float* dx) noexcept {
  const std::size_t cells = rows * layer.positions(), O = layer.out_c;
  // The input's gradient first: it reads the reordered weight, which the
  // weight's gradient then overwrites.
  if (dx != nullptr) {
    detail::gemm_nn(cells, layer.patch(), O, dy, weight, d_patches);
    col2im(layer, d_patches, rows, dx);
  }
  // d weight [out][patch] = dyᵀ · patches, in torch's order; d bias = dy's column sums.
  detail::gemm_tn(O, layer.patch(), cells, dy, patches, weight);
  reorder_weight(layer, weight, grads + layer.offset, false);
  float* db = grads + layer.bias_offset();
  std::fill_n(db, O, 0.0f);
  for (std::size_t i = 0; i < cells; ++i) {
    const float* row = dy + i * O;
    for (std::size_t o = 0; o < O; ++o) db[o] += row[o];
  }
}

conv_stack::conv_stack(const conv_spec& spec, std::size_t offset, std::size_t max_rows) {
  std::size_t h = spec.height, w = spec.width, c = spec.channels, widest_out = 0, widest_patches = 0;
  for (const auto& l : spec.layers) {
    const conv_layer layer{.in_h = h, .in_w = w, .in_c = c, .out_c = l.channels, .kernel = l.kernel,
                           .stride = l.stride, .offset = offset};
    layers_.push_back(layer);
    outputs_.emplace_back(max_rows * layer.out_size());
    patches_.emplace_back(max_rows * layer.positions() * layer.patch());
    weights_.emplace_back(layer.out_c * layer.patch());
    widest_out = std::max(widest_out, layer.out_size());
    widest_patches = std::max(widest_patches, layer.positions() * layer.patch());
    offset += layer.size();
    h = layer.out_h();
    w = layer.out_w();
    c = layer.out_c;
  }
  // The input's gradient is needed from the second layer on only.
  if (layers_.size() > 1) d_patches_.resize(max_rows * widest_patches);
  delta_a_.resize(max_rows * widest_out);
  delta_b_.resize(max_rows * widest_out);
}

std::size_t conv_stack::parameter_count() const noexcept {
  std::size_t n = 0;
  for (const auto& l : layers_) n += l.size();
  return n;
}

const float* conv_stack::forward(const float* params, const float* x, std::size_t rows) noexcept {
  const float* in = x;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    float* y = outputs_[l].data();
    conv_forward(layers_[l], params, in, rows, patches_[l].data(), weights_[l].data(), y);
    relu_forward(y, rows * layers_[l].out_size());
    in = y;
  }
  return in;
}

void conv_stack::backward(float* grads, const float* d_out, std::size_t rows) noexcept {
  if (layers_.empty()) return;
  // `dy`: the gradient of layer l's output after its ReLU, in a buffer of our own.
  float* dy = delta_a_.data();
  std::copy_n(d_out, rows * layers_.back().out_size(), dy);
  for (std::size_t l = layers_.size(); l-- > 0;) {
    const auto& layer = layers_[l];
    relu_backward(outputs_[l].data(), dy, rows * layer.out_size());
    float* dx = l == 0 ? nullptr : (dy == delta_a_.data() ? delta_b_.data() : delta_a_.data());
    conv_backward(layer, grads, patches_[l].data(), dy, rows, weights_[l].data(), d_patches_.data(), dx);
    dy = dx;
  }
}

encoder::encoder(std::size_t in, const conv_spec& conv, const std::vector<std::size_t>& hidden, activation act,
                 std::size_t offset, std::size_t max_rows)
    : conv_(conv, offset, max_rows) {
  const std::size_t dense_in = conv_.empty() ? in : conv_.output_dim();
  features_ = hidden.empty() ? dense_in : hidden.back();
  if (!hidden.empty()) {
    dense_ = make_mlp(dense_in, std::vector<std::size_t>(hidden.begin(), hidden.end() - 1), hidden.back(),
                      offset + conv_.parameter_count(), max_rows, act);
  }
  d_features_.resize(max_rows * features_);
  if (!conv_.empty()) d_conv_.resize(max_rows * dense_in);
}

std::size_t encoder::parameter_count() const noexcept {
  return conv_.parameter_count() + fused::parameter_count(dense_);
}

const float* encoder::forward(const float* params, const float* x, std::size_t rows) noexcept {
  dense_in_ = conv_.forward(params, x, rows);
  const float* in = dense_in_;
  if (dense_.layers.empty()) return in;
  float* y = dense_.outputs.back().data();
  fused::forward(dense_, params, in, rows);
  activate(dense_.act, y, rows * features_);
  return y;
}

void encoder::backward(const float* params, float* grads, const float* d_features, std::size_t rows) noexcept {
  if (dense_.layers.empty()) {
    conv_.backward(grads, d_features, rows);
    return;
  }
  float* d = d_features_.data();
  std::copy_n(d_features, rows * features_, d);
  activate_backward(dense_.act, dense_.outputs.back().data(), d, rows * features_);
  // With convolutions the dense layers' input gradient goes on into them.
  fused::backward(dense_, params, grads, dense_in_, d, rows, conv_.empty() ? nullptr : d_conv_.data());
  conv_.backward(grads, d_conv_.data(), rows);
}

}  // namespace coral::learners::fused
