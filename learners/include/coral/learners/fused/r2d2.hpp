#pragma once
/// \file
/// R2D2's recurrent Q-network and update on the fused engine (torch-free):
/// the trunk (fused::lstm_trunk) and a linear head of one Q per action, an
/// online and a target copy, and the update of learners/src/r2d2_learner.cpp
/// (burn-in without gradient, n-step double-Q targets in rescaled space,
/// the importance-weighted mean squared TD error per sequence, new
/// priorities, clipping, Adam). The flat parameters are the torch twin's:
/// the trunk's parameters(), then the head's weight [A][H] and bias [A].

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/fused/layers.hpp"
#include "coral/learners/fused/lstm_trunk.hpp"
#include "coral/learners/fused/optim.hpp"
#include "coral/learners/network.hpp"
#include "coral/learners/r2d2.hpp"
#include "coral/learners/r2d2_learner.hpp"
#include "coral/replay/sequence.hpp"

namespace coral::learners::fused {

/// R2D2's networks for batches of up to `max_rows` sequences of up to
/// `max_length` slots (the sequence length, burn-in included), with all
/// the update's buffers, allocated once.
class recurrent_q_network {
 public:
  /// `spec`: spec.lstm > 0 and one Discrete action space (nvec of one), as
  /// the torch learner has checked before it builds its networks.
  recurrent_q_network(const network_spec& spec, std::size_t max_rows, std::size_t max_length);

  /// The most sequences an update may have.
  [[nodiscard]] std::size_t max_rows() const noexcept { return max_rows_; }
  /// The longest sequence (burn-in included) an update may have.
  [[nodiscard]] std::size_t max_length() const noexcept { return max_length_; }
  /// The online network's flat parameters, in the torch twin's order.
  [[nodiscard]] std::span<float> parameters() noexcept { return params_; }
  /// The online network's flat parameters (read-only).
  [[nodiscard]] std::span<const float> parameters() const noexcept { return params_; }
  /// The flat gradients of the last update's loss.
  [[nodiscard]] std::span<float> gradients() noexcept { return grads_; }
  /// The target network's flat parameters.
  [[nodiscard]] std::span<float> target_parameters() noexcept { return target_params_; }
  /// The target network's flat parameters (read-only).
  [[nodiscard]] std::span<const float> target_parameters() const noexcept { return target_params_; }
  /// Copies the online parameters into the target.
  void sync_target() noexcept;

  /// The update's loss and gradients on `batch` (its layout's length ≤
  /// max_length, size ≤ max_rows): gradients() holds them afterwards and
  /// batch.priorities each sequence's new priority. Returns td_loss,
  /// mean_q, mean_abs_td and q_max as the torch learner measures them, and
  /// burn_in_seconds: the time the burn-in's unrolls took.
  /// Throws usage_error (errors::fused_too_many_rows) for a batch larger
  /// than the network was made for.
  r2d2_update_stats loss_gradients(replay::sequence_batch& batch, const dqn_config& dqn, const r2d2_config& config);

 private:
  std::size_t in_, width_, actions_, max_rows_, max_length_;
  std::vector<float> params_, grads_, target_params_;
  lstm_trunk online_, target_;
  dense_layer head_;
  std::vector<float> x_, keep_;            // [(L + 1) × B][in], [(L + 1) × B]: time-major
  std::vector<float> h0_, c0_;             // [B][H]
  std::vector<float> burn_h_, burn_c_;     // [burn-in × B][H]: online's burn-in
  std::vector<float> target_burn_h_, target_burn_c_;
  std::vector<float> hs_, cs_;             // [T × B][H]: online's trained unroll
  std::vector<float> target_hs_, target_cs_;
  std::vector<float> q_, target_q_;        // [T × B][A]
  std::vector<float> d_q_, d_h_;           // [T × B][A], [T × B][H]
  std::vector<float> bootstrap_, targets_, mask_, td_;  // batch-major, as r2d2_math has them
};

/// Fresh flat parameters for R2D2's network of `spec` as the torch learner
/// initialises them (orthogonal weights: gain √2 for the encoder's layers,
/// 1 for the LSTM's two matrices and the head; zero biases), each matrix
/// from coral::rng(seed, its index): the same distribution as torch's, not
/// its numbers. `spec` as recurrent_q_network's.
[[nodiscard]] std::vector<float> init_recurrent_q_network(const network_spec& spec, std::uint64_t seed);

/// loss_gradients(), then clipping to dqn.max_grad_norm (where > 0; the
/// norm before in grad_norm) and one Adam step of dqn.learning_rate. The
/// caller syncs the target every dqn.target_update updates.
r2d2_update_stats r2d2_step(recurrent_q_network& net, adam& optimiser, replay::sequence_batch& batch,
                            const dqn_config& dqn, const r2d2_config& config);

}  // namespace coral::learners::fused
