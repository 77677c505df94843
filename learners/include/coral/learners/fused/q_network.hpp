#pragma once
/// \file
/// DQN's Q-network and its update on the fused engine (torch-free): an MLP
/// obs → hidden (tanh) → one value per action (with convolutions: obs →
/// convolutions → hidden, ReLU after each → one value per action), an online and a target copy,
/// and the update of learners/src/dqn_torch.cpp (double DQN or not, the
/// Huber loss weighted by importance weights scaled to a largest of 1,
/// gradient-norm clipping, Adam).
///
/// The flat parameters are the torch twin's (make_mlp(...)->parameters():
/// per layer weight [out][in], then bias), so weights move between the
/// backends unchanged.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "coral/learners/dqn_learner.hpp"
#include "coral/learners/fused/conv.hpp"
#include "coral/learners/fused/layers.hpp"
#include "coral/learners/fused/optim.hpp"

namespace coral::learners::fused {

/// An online Q-network and its target, with buffers for batches of up to
/// `max_rows` transitions, allocated once.
class q_network {
 public:
  /// `widths`: the dense layers' input width, the hidden widths, the
  /// number of actions (q_network_widths()); `conv`: the convolutions
  /// before them (none: an MLP of tanh layers; with some the hidden layers
  /// use ReLU, and widths.front() is conv.output_dim()). Parameters start at
  /// zero (see init_q_network()): the convolutions', then the dense layers'.
  q_network(std::span<const std::size_t> widths, std::size_t max_rows, const conv_spec& conv = {});

  /// The widths it was built for.
  [[nodiscard]] std::span<const std::size_t> widths() const noexcept { return widths_; }
  /// The convolutions it was built with.
  [[nodiscard]] const conv_spec& conv() const noexcept { return conv_; }
  /// Floats of an observation: widths().front(), or the convolutions' grid.
  [[nodiscard]] std::size_t input_dim() const noexcept { return input_dim_; }
  /// The most transitions an update may have.
  [[nodiscard]] std::size_t max_rows() const noexcept { return max_rows_; }
  /// The online network's flat parameters, in the torch twin's order.
  [[nodiscard]] std::span<float> parameters() noexcept { return params_; }
  /// The online network's flat parameters (read-only).
  [[nodiscard]] std::span<const float> parameters() const noexcept { return params_; }
  /// The flat gradients of the last update's loss, laid out as parameters().
  [[nodiscard]] std::span<float> gradients() noexcept { return grads_; }
  /// The target network's flat parameters.
  [[nodiscard]] std::span<float> target_parameters() noexcept { return target_params_; }
  /// The target network's flat parameters (read-only).
  [[nodiscard]] std::span<const float> target_parameters() const noexcept { return target_params_; }
  /// Copies the online parameters into the target.
  void sync_target() noexcept;

  /// The online network's Q-values [rows][actions] of x [rows][in]
  /// (rows ≤ 2 × max_rows; overwrites the last update's activations).
  [[nodiscard]] std::span<const float> q_values(const float* x, std::size_t rows);

 private:
  friend struct dqn_access;
  std::vector<std::size_t> widths_;
  conv_spec conv_;
  std::size_t input_dim_;
  std::size_t max_rows_;
  std::vector<float> params_;
  std::vector<float> grads_;
  std::vector<float> target_params_;
  conv_stack online_conv_;  // 2 × max_rows, as online_; empty without convolutions
  conv_stack target_conv_;  // max_rows
  mlp online_;   // 2 × max_rows: observations and next observations in one pass
  mlp target_;   // max_rows: next observations
  std::vector<float> input_;     // [2 × max_rows][input_dim]
  std::vector<float> d_conv_;    // [max_rows][widths.front()]: with convolutions
  std::vector<float> d_q_;       // [max_rows][actions]
  std::vector<float> weights_;   // [max_rows]: importance weights, scaled
};

/// Fresh flat parameters for `widths` and `conv` as the torch learner
/// initialises them (orthogonal, gain √2 for the convolutions and hidden
/// layers and 1 for the head, zero biases), from coral::rng(seed).
[[nodiscard]] std::vector<float> init_q_network(std::span<const std::size_t> widths, std::uint64_t seed,
                                                const conv_spec& conv = {});

/// A batch of n-step transitions, as replay::sample_batch holds them.
struct dqn_batch {
  std::size_t rows = 0;                         ///< transitions
  std::span<const float> observations;          ///< [rows][in]
  std::span<const float> next_observations;     ///< [rows][in]
  std::span<const std::int32_t> actions;        ///< [rows]
  std::span<const float> returns;               ///< [rows]: n-step returns
  std::span<const float> discounts;             ///< [rows]: γ^k, or 0 after a terminal
  std::span<const float> weights;               ///< [rows]: importance weights
  /// [rows][actions] (1 = legal) or empty: the actions legal at each next
  /// observation, the only ones the bootstrap's max and argmax consider.
  std::span<const std::uint8_t> next_masks = {};
};

/// What an update measured, as the torch learner reports it.
struct dqn_step_stats {
  double td_loss = 0;      ///< mean of weight × Huber
  double mean_q = 0;       ///< mean Q of the actions taken
  double mean_abs_td = 0;  ///< mean |y − Q|
  double grad_norm = 0;    ///< the norm before clipping (0 without clipping)
};

/// Forward (online over observations and next observations in one pass,
/// target over next observations), the targets y = return + discount ×
/// bootstrap, the loss and backward: gradients() holds the loss's
/// gradients, `td_errors` [rows] each |y − Q|. Uses config's huber_delta and
/// double_dqn. Throws usage_error (errors::fused_too_many_rows) for more
/// rows than max_rows().
dqn_step_stats dqn_loss_gradients(q_network& net, const dqn_batch& batch, const dqn_config& config,
                                  std::span<float> td_errors);

/// dqn_loss_gradients(), then clipping to config.max_grad_norm (where > 0)
/// and one Adam step of config.learning_rate. The target is not synced:
/// the caller counts updates and calls sync_target() every
/// config.target_update.
dqn_step_stats dqn_step(q_network& net, adam& optimiser, const dqn_batch& batch, const dqn_config& config,
                        std::span<float> td_errors);

}  // namespace coral::learners::fused
