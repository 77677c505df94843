#pragma once
/// \file
/// PPO's minibatch step on the fused engine (torch-free): forward, the
/// clipped-surrogate loss, backward by hand, gradient-norm clipping and
/// Adam, with the semantics of the torch learner's minibatch body
/// (learners/src/ppo_torch.cpp).
///
/// Wiring it into an update: one actor_critic (max_rows = the minibatch
/// size), one adam over its parameters, one ppo_workspace; for each
/// minibatch, gather its rows into contiguous buffers, then
///
///     auto stats = fused::ppo_step(net, optimiser, work, minibatch, config, lr);
///
/// and accumulate the stats of the last epoch as the torch update does.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "coral/learners/fused/actor_critic.hpp"
#include "coral/learners/fused/optim.hpp"
#include "coral/learners/ppo_learner.hpp"

namespace coral::learners::fused {

/// One minibatch, its rows contiguous.
struct ppo_minibatch {
  std::size_t rows = 0;                             ///< rows in the minibatch
  std::span<const float> observations;              ///< [rows][input_dim], normalised as the network sees them
  std::span<const std::int32_t> discrete_actions;   ///< [rows][nvec.size()]
  std::span<const float> continuous_actions;        ///< [rows][continuous_dim]
  std::span<const float> log_probs;                 ///< [rows]: the acting policy's
  std::span<const float> values;                    ///< [rows]: the acting policy's
  std::span<const float> advantages;                ///< [rows]: GAE, not yet normalised
  std::span<const float> returns;                   ///< [rows]
  /// [rows][sum of nvec]: the action masks the actions were drawn under
  /// (1 = legal), or empty: every value legal (actor_critic::log_prob_entropy()).
  std::span<const std::uint8_t> action_masks = {};
};

/// What a minibatch step measured, as the torch update accumulates it.
struct ppo_step_stats {
  double loss = 0;           ///< policy − entropy_coef × entropy + value_coef × value loss
  double policy_loss = 0;    ///< the clipped surrogate, mean over rows
  double value_loss = 0;     ///< 0.5 × mean squared error (clipped as configured)
  double entropy = 0;        ///< mean entropy
  double approx_kl = 0;      ///< mean of (ratio − 1) − log ratio
  double clip_fraction = 0;  ///< fraction of rows with |ratio − 1| > clip
  double grad_norm = 0;      ///< the gradients' norm before clipping (0 without clipping)
};

/// Per-row buffers of the loss, allocated once for up to `max_rows` rows.
struct ppo_workspace {
  /// Buffers for minibatches of up to `max_rows` rows.
  explicit ppo_workspace(std::size_t max_rows)
      : advantages(max_rows), d_log_prob(max_rows), d_entropy(max_rows), d_value(max_rows) {}
  std::vector<float> advantages;  ///< the minibatch's, normalised as configured
  std::vector<float> d_log_prob;  ///< the loss's gradient with respect to each row's log probability
  std::vector<float> d_entropy;   ///< ... each row's entropy
  std::vector<float> d_value;     ///< ... each row's value
};

/// Forward, loss and backward: leaves the loss's gradients in
/// net.gradients() and changes nothing else. Uses config's clip,
/// clip_value_loss, value_coef, entropy_coef and normalize_advantages
/// (advantages normalised by their mean and unbiased std + 1e-8, as torch's
/// std(): a one-row minibatch gets NaNs, as in torch). Throws usage_error
/// (errors::fused_too_many_rows) for more rows than the network's max_rows().
ppo_step_stats ppo_loss_gradients(actor_critic& net, ppo_workspace& work, const ppo_minibatch& batch,
                                  const ppo_config& config);

/// ppo_loss_gradients() after `net`'s forward() of the minibatch's rows
/// (its observations, or the features a trunk made of them): the loss and
/// backward, and, unless `d_input` is null, the loss's gradient with
/// respect to the rows `net` was given, d_input [rows][input_dim]
/// (actor_critic::backward()'s d_x).
ppo_step_stats ppo_loss_after_forward(actor_critic& net, ppo_workspace& work, const ppo_minibatch& batch,
                                      const ppo_config& config, float* d_input);

/// ppo_loss_gradients(), then the gradients clipped to config.max_grad_norm
/// (where > 0) and one Adam step of size `learning_rate`.
ppo_step_stats ppo_step(actor_critic& net, adam& optimiser, ppo_workspace& work, const ppo_minibatch& batch,
                        const ppo_config& config, double learning_rate);

}  // namespace coral::learners::fused
