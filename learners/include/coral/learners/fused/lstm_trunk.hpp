#pragma once
/// \file
/// The recurrent trunk on the fused engine (torch-free): an encoder of the
/// hidden layers (tanh after each, the last too) and an LSTM cell (gates
/// input, forget, cell, output, as torch's LSTMCell), unrolled over T steps
/// of B rows with a per-row state reset at episode starts, and its
/// backward through the whole unroll (truncated back-propagation through
/// time). The torch twin is learners/src/actor_critic.hpp's
/// recurrent_trunk; the flat parameters are its parameters() in order: the
/// encoder's layers (weight [out][in], bias), then weight_ih [4H][F],
/// weight_hh [4H][H], bias_ih [4H], bias_hh [4H].
///
/// Everything is time-major: row t × B + b is step t of row b. A burn-in
/// (R2D2's) is an unroll without `for_backward` whose last state starts
/// the unroll that trains.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "coral/learners/fused/conv.hpp"
#include "coral/learners/fused/layers.hpp"

namespace coral::learners::fused {

/// An encoder and LSTM cell over a flat parameter buffer at `offset`, with
/// the buffers of unrolls of up to `max_steps` steps of `max_rows` rows.
class lstm_trunk {
 public:
  /// in → hidden... (tanh after each) → LSTM of width `width`; parameters
  /// from `offset` of the flat buffers forward() and backward() are given.
  /// With `conv` layers the input is their grid and the encoder is
  /// fused::encoder's: the convolutions, then the hidden layers with ReLU.
  lstm_trunk(std::size_t in, const std::vector<std::size_t>& hidden, std::size_t width, std::size_t offset,
             std::size_t max_rows, std::size_t max_steps, const conv_spec& conv = {});

  /// Floats of the trunk's parameters.
  [[nodiscard]] std::size_t parameter_count() const noexcept { return count_; }
  /// The LSTM's width H.
  [[nodiscard]] std::size_t width() const noexcept { return width_; }

  /// Unrolls `steps` steps of `rows` rows: x [steps × rows][in], keep
  /// [steps × rows] (what a row's state is multiplied by before the step:
  /// 0 where an episode starts, else 1), from h0, c0 [rows][H]. Writes h
  /// and c after every step, hs and cs [steps × rows][H]. With
  /// `for_backward` it keeps what backward() reads (x and keep must then
  /// stay valid and unchanged until it). Throws usage_error
  /// (errors::fused_too_many_rows) for more rows or steps than it was made for.
  void forward(const float* params, const float* x, const float* keep, const float* h0, const float* c0,
               std::size_t rows, std::size_t steps, float* hs, float* cs, bool for_backward);

  /// The backward of the last forward(for_backward = true) from the loss's
  /// gradients with respect to every step's h and c, d_hs and d_cs
  /// [steps × rows][H] (d_cs may be null: none). Writes (not adds) the
  /// trunk's parameter gradients into `grads` at its offset.
  void backward(const float* params, float* grads, const float* d_hs, const float* d_cs) noexcept;

 private:
  friend void init_lstm_trunk(float* flat, std::size_t offset, std::size_t in, const std::vector<std::size_t>& hidden,
                              std::size_t width, std::uint64_t seed, std::uint64_t& stream, const conv_spec& conv);
  std::size_t width_, features_, count_, max_rows_, max_steps_;
  std::size_t w_ih_, w_hh_, b_ih_, b_hh_;  // offsets into the flat buffer
  bool encoded_;                           // hidden layers or convolutions present
  encoder encoder_;
  const float* features_out_ = nullptr;    // the last forward()'s encoder output
  std::size_t rows_ = 0, steps_ = 0;
  const float* x_ = nullptr;
  const float* keep_ = nullptr;
  std::vector<float> bias_;     // [4H]: bias_ih + bias_hh
  std::vector<float> w_hh_t_;   // [H][4H]: weight_hh transposed, per forward()
  std::vector<float> hh_;       // [rows][4H]: a step's h · W_hhᵀ
  std::vector<float> gates_;    // [steps × rows][4H]: activated gates (i, f, g, o)
  std::vector<float> h_in_;     // [steps × rows][H]: the state each step starts from
  std::vector<float> c_in_;
  std::vector<float> tanh_c_;   // [steps × rows][H]
  std::vector<float> d_gates_;  // [steps × rows][4H]
  std::vector<float> dh_, dc_;  // [rows][H]: from the steps after
  std::vector<float> d_features_;  // [steps × rows][features]
};

/// Writes fresh parameters of the trunk lstm_trunk(in, hidden, width,
/// offset, ..., conv) has into `flat` as the torch twin initialises them:
/// orthogonal weights (fused::orthogonal(); gain √2 for the encoder's
/// convolutions and dense layers, 1 for weight_ih and weight_hh), zero
/// biases. Matrix k of them comes from coral::rng(seed, stream + k);
/// `stream` is left past the last.
void init_lstm_trunk(float* flat, std::size_t offset, std::size_t in, const std::vector<std::size_t>& hidden,
                     std::size_t width, std::uint64_t seed, std::uint64_t& stream, const conv_spec& conv = {});

}  // namespace coral::learners::fused
