#pragma once
/// \file
/// The fused engine's layers (torch-free): a dense layer and tanh, and an
/// MLP of them, as plain structs of shapes and buffers with free forward
/// and backward functions beside each other.
///
/// Parameters and gradients are not owned by a layer: a layer names where
/// its weight ([out][in], torch's Linear layout) and bias ([out]) lie in
/// one flat parameter buffer, and its gradients lie at the same offsets of
/// a flat gradient buffer of the same size. So a network's parameters are
/// one span in exactly the order and layout of its torch twin's
/// `ordered()`, and clipping and Adam are single passes over it.
///
/// Rows are a runtime count up to the `max_rows` a buffer was made for;
/// nothing is allocated after construction. The products are OpenBLAS's
/// cblas_sgemm (learners/src/fused/gemm.cpp says why).

#include <cstddef>
#include <vector>

namespace coral::learners::fused {

/// Where one dense layer's parameters lie in a flat buffer: weight
/// [out][in] from `offset`, then bias [out].
struct dense_layer {
  std::size_t in = 0;      ///< input width
  std::size_t out = 0;     ///< output width
  std::size_t offset = 0;  ///< index of weight[0][0] in the flat buffer
  /// Index of bias[0]: offset + in × out.
  [[nodiscard]] std::size_t bias_offset() const noexcept { return offset + in * out; }
  /// Floats of the layer's parameters: in × out + out.
  [[nodiscard]] std::size_t size() const noexcept { return in * out + out; }
};

/// y [rows][out] = x [rows][in] · weightᵀ + bias, parameters read from `params`.
void dense_forward(const dense_layer& layer, const float* params, const float* x, std::size_t rows, float* y) noexcept;

/// The backward of dense_forward(): from `dy` [rows][out], writes (not adds)
/// the weight's and bias's gradients into `grads` at the layer's offsets,
/// and, unless `dx` is null, dx [rows][in] = dy · weight.
void dense_backward(const dense_layer& layer, const float* params, float* grads, const float* x, const float* dy,
                    std::size_t rows, float* dx) noexcept;

/// y[i] = tanh(y[i]) for i < n (coral::learners::tanh_in_place: within 1.5 ulp).
void tanh_forward(float* y, std::size_t n) noexcept;

/// The backward of tanh_forward() from its output `y`: dy[i] *= 1 − y[i]².
void tanh_backward(const float* y, float* dy, std::size_t n) noexcept;

/// y[i] = max(y[i], 0) for i < n.
void relu_forward(float* y, std::size_t n) noexcept;

/// The backward of relu_forward() from its output `y`: dy[i] = 0 where y[i] ≤ 0.
void relu_backward(const float* y, float* dy, std::size_t n) noexcept;

/// What follows a hidden layer: tanh (the MLPs) or ReLU (after a convolution).
enum class activation { tanh, relu };

/// tanh_forward() or relu_forward() of y [n].
void activate(activation act, float* y, std::size_t n) noexcept;

/// tanh_backward() or relu_backward() from the activation's output `y`.
void activate_backward(activation act, const float* y, float* dy, std::size_t n) noexcept;

/// y[i] = 1 / (1 + e^−y[i]) for i < n, within 2.5 ulp, vectorised (AVX2
/// where the CPU has it, the same bits as without).
void sigmoid_in_place(float* y, std::size_t n) noexcept;

/// sigmoid_in_place() without the CPU's vector extensions: the plain
/// reference its tests compare with.
void sigmoid_in_place_reference(float* y, std::size_t n) noexcept;

/// An MLP in → hidden (`act` after each) → out, with the buffers of a
/// forward and backward pass of up to `max_rows` rows.
struct mlp {
  std::vector<dense_layer> layers;
  activation act = activation::tanh;
  std::size_t max_rows = 0;
  /// Each layer's output [max_rows][out]: a hidden layer's after its activation.
  std::vector<std::vector<float>> outputs;
  /// Two buffers [max_rows][widest] for the gradients flowing back.
  std::vector<float> delta_a, delta_b;
};

/// An MLP of widths in, hidden..., out whose parameters start at `offset`
/// of a flat buffer (layer by layer: weight, bias), for up to `max_rows`
/// rows, `act` after each hidden layer.
[[nodiscard]] mlp make_mlp(std::size_t in, const std::vector<std::size_t>& hidden, std::size_t out, std::size_t offset,
                           std::size_t max_rows, activation act = activation::tanh);

/// Floats of an MLP's parameters.
[[nodiscard]] std::size_t parameter_count(const mlp& net) noexcept;

/// Runs `net` on x [rows][in] (rows ≤ max_rows); returns its output
/// [rows][out] (net.outputs.back()).
const float* forward(mlp& net, const float* params, const float* x, std::size_t rows) noexcept;

/// The backward of the last forward() of these `rows` from the output's
/// gradient `d_out` [rows][out]: writes every layer's gradients into
/// `grads`, and dx [rows][in] unless `dx` is null.
void backward(mlp& net, const float* params, float* grads, const float* x, const float* d_out, std::size_t rows,
              float* dx) noexcept;

}  // namespace coral::learners::fused
