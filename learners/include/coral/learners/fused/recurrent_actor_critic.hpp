#pragma once
/// \file
/// The recurrent actor-critic on the fused engine (torch-free): the trunk
/// (fused::lstm_trunk: an encoder of the convolutions, if any, and the
/// hidden layers, then an LSTM cell)
/// and linear actor and critic heads on its output, unrolled over T steps
/// of B rows with per-row state resets, and back-propagated through the
/// whole unroll. The torch twin is learners/src/actor_critic.hpp's
/// actor_critic with spec.lstm > 0; the flat parameters are its ordered():
/// log_std (Box elements), the trunk's parameters (lstm_trunk.hpp), the
/// actor head's weight [heads][H] and bias, the critic head's weight [1][H]
/// and bias.
///
/// The heads are a fused::actor_critic over the LSTM's output (no hidden
/// layers), so the categorical and Gaussian arithmetic is the MLP
/// network's; their parameters are copied in before each forward() and
/// their gradients out after each backward().
///
/// Everything is time-major: row t × B + b is step t of row b.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "coral/learners/fused/actor_critic.hpp"
#include "coral/learners/fused/lstm_trunk.hpp"
#include "coral/learners/network.hpp"

namespace coral::learners::fused {

/// The network of a spec with an LSTM (spec.lstm > 0), with the buffers
/// for unrolls of up to `max_rows` rows of `max_steps` steps.
///
/// A pass: forward() of observations, then heads().log_prob_entropy() on
/// the actions taken, then backward() from the loss's gradients with
/// respect to each step's log probability, entropy and value.
class recurrent_actor_critic {
 public:
  /// Throws usage_error (errors::fused_needs_lstm) for a spec without an LSTM.
  recurrent_actor_critic(const network_spec& spec, std::size_t max_rows, std::size_t max_steps);

  /// Floats of the flat parameters of `spec` (as the torch twin's flatten()).
  [[nodiscard]] static std::size_t parameter_count(const network_spec& spec);

  /// The spec it was built for.
  [[nodiscard]] const network_spec& spec() const noexcept { return spec_; }
  /// The most rows an unroll may have.
  [[nodiscard]] std::size_t max_rows() const noexcept { return max_rows_; }
  /// The most steps an unroll may have.
  [[nodiscard]] std::size_t max_steps() const noexcept { return max_steps_; }
  /// Makes the buffers hold unrolls of `rows` × `steps` at least: allocates
  /// only where either is more than before (a run's shapes are fixed, so
  /// once). The parameters are kept.
  void reserve(std::size_t rows, std::size_t steps);

  /// The flat parameters, in the torch twin's order and layout.
  [[nodiscard]] std::span<float> parameters() noexcept { return params_; }
  /// The flat parameters (read-only).
  [[nodiscard]] std::span<const float> parameters() const noexcept { return params_; }
  /// The flat gradients of the last backward(), laid out as parameters().
  [[nodiscard]] std::span<float> gradients() noexcept { return grads_; }
  /// The flat gradients (read-only).
  [[nodiscard]] std::span<const float> gradients() const noexcept { return grads_; }

  /// Unrolls `steps` steps of `rows` rows: x [steps × rows][input_dim],
  /// keep [steps × rows] (0 where an episode starts: the state is zeroed
  /// before that step; else 1), from h0, c0 [rows][H]; then the heads on
  /// every step's h. With `for_backward` it keeps what backward() reads (x
  /// and keep must then stay valid and unchanged until it). Throws
  /// usage_error (errors::fused_too_many_rows) beyond max_rows() or max_steps().
  void forward(const float* x, const float* keep, const float* h0, const float* c0, std::size_t rows,
               std::size_t steps, bool for_backward);
  /// The LSTM's h after every step of the last forward() [steps × rows][H].
  [[nodiscard]] std::span<const float> features() const noexcept;
  /// The LSTM's c after every step of the last forward() [steps × rows][H].
  [[nodiscard]] std::span<const float> cells() const noexcept;
  /// The heads, run by forward() on its steps × rows features: their
  /// actor_out(), values(), and log_prob_entropy() of the actions taken.
  [[nodiscard]] actor_critic& heads() noexcept { return heads_; }
  /// The heads (read-only).
  [[nodiscard]] const actor_critic& heads() const noexcept { return heads_; }

  /// Writes gradients() of a loss whose gradients with respect to each
  /// step's log probability, entropy and value are `d_log_prob`,
  /// `d_entropy`, `d_value` [steps × rows each], after forward(for_backward
  /// = true) and heads().log_prob_entropy().
  void backward(const float* d_log_prob, const float* d_entropy, const float* d_value) noexcept;
  /// The same from the heads' own backward(), run by the caller with
  /// feature_gradients() as its d_x: the trunk's backward and the gradients
  /// gathered into gradients().
  void backward_from_features() noexcept;
  /// Where the heads' backward() writes the loss's gradient with respect
  /// to the features [max_rows × max_steps][H].
  [[nodiscard]] float* feature_gradients() noexcept { return d_features_.data(); }

 private:
  network_spec spec_;
  std::size_t max_rows_ = 0, max_steps_ = 0;
  std::size_t continuous_;  // Box elements: log_std's floats, first in the flat buffer
  std::size_t trunk_end_;   // where the actor head's parameters start
  std::vector<float> params_, grads_;
  lstm_trunk trunk_;
  actor_critic heads_;
  std::size_t rows_ = 0, steps_ = 0;
  std::vector<float> hs_, cs_;        // [max_steps × max_rows][H]
  std::vector<float> d_features_;     // [max_steps × max_rows][H]
};

/// Fresh flat parameters for `spec` (spec.lstm > 0) as the torch twin
/// initialises them (orthogonal weights: gain √2 for the encoder's layers,
/// 1 for the LSTM's two matrices and the critic head, 0.01 for the actor
/// head; zero biases; log std 0), each matrix from coral::rng(seed, its
/// index): the same distribution as torch's, not its numbers.
[[nodiscard]] std::vector<float> init_recurrent_actor_critic(const network_spec& spec, std::uint64_t seed);

}  // namespace coral::learners::fused
