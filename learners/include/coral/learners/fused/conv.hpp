#pragma once
/// \file
/// The fused engine's convolutions (torch-free): a 2-D convolution layer
/// with no padding, forward and backward by hand as im2col and one GEMM
/// each (learners/src/fused/conv.cpp says why not a direct loop), ReLU, and
/// a stack of them with its buffers.
///
/// Grids are row-major with the channel last: row r's element (y, x, c) of
/// an h × w × c grid is at r·h·w·c + (y·w + x)·c + c (how a Box of shape
/// (h, w, c) lays out its elements, and how a layer's output is laid out
/// for the next). A layer's parameters lie in a flat buffer as torch's
/// Conv2d has them: weight [out][in][k][k] from its offset, then bias
/// [out]; its gradients at the same offsets of the gradient buffer (as the
/// dense layers of layers.hpp).

#include <cstddef>
#include <vector>

#include "coral/learners/fused/layers.hpp"
#include "coral/learners/network.hpp"

namespace coral::learners::fused {

/// One convolution: an in_h × in_w × in_c grid to an out_h() × out_w() ×
/// out_c one, a kernel × kernel window moved by `stride`, no padding.
struct conv_layer {
  std::size_t in_h = 0, in_w = 0, in_c = 0;  ///< the input grid
  std::size_t out_c = 0;                     ///< output channels
  std::size_t kernel = 0;                    ///< window side
  std::size_t stride = 1;                    ///< cells the window moves by
  std::size_t offset = 0;                    ///< index of weight[0][0][0][0] in the flat buffer

  /// Output rows: (in_h − kernel) / stride + 1.
  [[nodiscard]] std::size_t out_h() const noexcept { return (in_h - kernel) / stride + 1; }
  /// Output columns: (in_w − kernel) / stride + 1.
  [[nodiscard]] std::size_t out_w() const noexcept { return (in_w - kernel) / stride + 1; }
  /// Output cells per row: out_h × out_w.
  [[nodiscard]] std::size_t positions() const noexcept { return out_h() * out_w(); }
  /// Floats a window reads (one patch, one weight row): in_c × kernel².
  [[nodiscard]] std::size_t patch() const noexcept { return in_c * kernel * kernel; }
  /// Floats of one row's input: in_h × in_w × in_c.
  [[nodiscard]] std::size_t in_size() const noexcept { return in_h * in_w * in_c; }
  /// Floats of one row's output: positions × out_c.
  [[nodiscard]] std::size_t out_size() const noexcept { return positions() * out_c; }
  /// Index of bias[0]: offset + out_c × patch().
  [[nodiscard]] std::size_t bias_offset() const noexcept { return offset + out_c * patch(); }
  /// Floats of the layer's parameters.
  [[nodiscard]] std::size_t size() const noexcept { return out_c * patch() + out_c; }
};

/// Writes the windows of x [rows][in_h][in_w][in_c] as the rows of
/// `patches` [rows × positions][patch()], each in the order (ky, kx, c): a
/// window's row of cells is contiguous in x, one copy each.
void im2col(const conv_layer& layer, const float* x, std::size_t rows, float* patches) noexcept;

/// The transpose of im2col(): adds every window's floats of `d_patches`
/// back onto the cells they came from in dx [rows][in_h][in_w][in_c],
/// which it zeroes first.
void col2im(const conv_layer& layer, const float* d_patches, std::size_t rows, float* dx) noexcept;

/// y [rows][out_h][out_w][out_c] = the convolution of x plus the bias,
/// through `patches` (im2col()'s [rows × positions][patch()]) and `weight`
/// (out_c × patch() floats: the weight reordered to the patches' order),
/// both kept for conv_backward().
void conv_forward(const conv_layer& layer, const float* params, const float* x, std::size_t rows, float* patches,
                  float* weight, float* y) noexcept;

/// The plain direct convolution, conv_forward()'s reference twin (tests
/// compare them): the same sums, in another order.
void conv_forward_reference(const conv_layer& layer, const float* params, const float* x, std::size_t rows,
                            float* y) noexcept;

/// The backward of conv_forward() from `dy` [rows][out_h][out_w][out_c] and
/// that pass's `patches` and `weight`: unless `dx` is null, dx
/// [rows][in_h][in_w][in_c] through `d_patches` (scratch of the patches'
/// size); then writes (not adds) the weight's and bias's gradients into
/// `grads` at the layer's offsets, through `weight`, which it overwrites.
void conv_backward(const conv_layer& layer, float* grads, const float* patches, const float* dy, std::size_t rows,
                   float* weight, float* d_patches, float* dx) noexcept;

/// The convolutions of a conv_spec (ReLU after each), their parameters
/// from `offset` of a flat buffer, with the buffers of a forward and
/// backward pass of up to `max_rows` rows. Default-constructed: no layers
/// (forward() returns its input).
class conv_stack {
 public:
  conv_stack() = default;
  conv_stack(const conv_spec& spec, std::size_t offset, std::size_t max_rows);

  /// Whether it has no layers.
  [[nodiscard]] bool empty() const noexcept { return layers_.empty(); }
  /// The layers, in order.
  [[nodiscard]] const std::vector<conv_layer>& layers() const noexcept { return layers_; }
  /// Floats of its parameters.
  [[nodiscard]] std::size_t parameter_count() const noexcept;
  /// Floats of a row's output (after the last ReLU).
  [[nodiscard]] std::size_t output_dim() const noexcept { return layers_.empty() ? 0 : layers_.back().out_size(); }

  /// Runs the layers on x [rows][in_h][in_w][in_c] (rows ≤ max_rows);
  /// returns the output
  /// [rows][output_dim()] after the last ReLU, or x itself without layers.
  const float* forward(const float* params, const float* x, std::size_t rows) noexcept;

  /// The backward of the last forward() over its first `rows` rows from
  /// the gradient of their output `d_out` [rows][output_dim()]: writes
  /// every layer's gradients into `grads`. (The input's gradient is not
  /// computed: a stack reads observations.)
  void backward(float* grads, const float* d_out, std::size_t rows) noexcept;

 private:
  std::vector<conv_layer> layers_;
  std::vector<std::vector<float>> outputs_;  // per layer [max_rows][out_size], after its ReLU
  std::vector<std::vector<float>> patches_;  // per layer [max_rows × positions][patch]
  std::vector<std::vector<float>> weights_;  // per layer [out_c][patch]: reordered to the patches' order
  std::vector<float> d_patches_;             // [max_rows × positions][patch], the widest layer's
  std::vector<float> delta_a_, delta_b_;     // [max_rows][out_size], the widest layer's
};

/// The layers before a network's heads (or its LSTM): its convolutions
/// (conv_stack; none for a flat input), then dense layers of the `hidden`
/// widths with `act` after each, the last one too. Its output, the
/// features, is the last hidden layer's [rows][hidden.back()]. Parameters
/// from `offset`: the convolutions', then the dense layers'.
class encoder {
 public:
  encoder() = default;
  /// Over inputs of `in` floats per row (conv's grid when it has layers).
  encoder(std::size_t in, const conv_spec& conv, const std::vector<std::size_t>& hidden, activation act,
          std::size_t offset, std::size_t max_rows);

  /// Floats of its parameters.
  [[nodiscard]] std::size_t parameter_count() const noexcept;
  /// Width of its output.
  [[nodiscard]] std::size_t output_dim() const noexcept { return features_; }
  /// The convolutions.
  [[nodiscard]] const conv_stack& convolutions() const noexcept { return conv_; }
  /// The dense layers.
  [[nodiscard]] const mlp& dense() const noexcept { return dense_; }

  /// Runs it on x [rows][in] (rows ≤ max_rows; x must stay valid and
  /// unchanged until backward()); returns the features [rows][output_dim()].
  const float* forward(const float* params, const float* x, std::size_t rows) noexcept;

  /// The backward of the last forward() over its first `rows` rows from
  /// their features' gradient `d_features` [rows][output_dim()]: writes
  /// every layer's gradients into `grads` (not the input's: an encoder
  /// reads observations).
  void backward(const float* params, float* grads, const float* d_features, std::size_t rows) noexcept;

 private:
  conv_stack conv_;
  mlp dense_;
  std::size_t features_ = 0;
  const float* dense_in_ = nullptr;  // the last forward()'s: x, or the convolutions' output
  std::vector<float> d_features_;  // [max_rows][features]: before the last activation
  std::vector<float> d_conv_;      // [max_rows][conv output]: with convolutions
};

}  // namespace coral::learners::fused
