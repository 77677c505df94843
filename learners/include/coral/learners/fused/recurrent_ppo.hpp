#pragma once
/// \file
/// Recurrent PPO's minibatch step on the fused engine (torch-free): the
/// minibatch's rows unrolled from their initial states with per-step state
/// resets, the heads, PPO's loss (fused::ppo_loss_after_forward(), the
/// MLP step's), back-propagation through the whole unroll, clipping and
/// Adam, with the semantics of the torch learner's recurrent minibatch body
/// (learners/src/ppo_torch.cpp with spec.lstm > 0).

#include <cstddef>
#include <span>

#include "coral/learners/fused/optim.hpp"
#include "coral/learners/fused/ppo.hpp"
#include "coral/learners/fused/recurrent_actor_critic.hpp"
#include "coral/learners/ppo_learner.hpp"

namespace coral::learners::fused {

/// A minibatch of whole rows (sequences), time-major.
struct recurrent_ppo_minibatch {
  std::size_t rows = 0;          ///< B: the sequences
  std::size_t steps = 0;         ///< T: steps of each
  std::span<const float> keep;   ///< [T × B]: 0 before a step that starts an episode, else 1
  std::span<const float> h0;     ///< [B][H]: each row's LSTM h before its first step
  std::span<const float> c0;     ///< [B][H]: and c
  /// The T × B steps (its rows), time-major: row t × B + b is step t of
  /// sequence b; observations [T × B][input_dim] normalised as the network
  /// sees them.
  ppo_minibatch steps_of;
};

/// The unroll, the heads, the loss and backward: leaves the loss's
/// gradients in net.gradients() and changes nothing else. The loss is the
/// MLP step's (ppo_loss_gradients()) over all T × B steps. Throws
/// usage_error (errors::fused_too_many_rows) for more rows or steps than
/// the network's buffers hold.
ppo_step_stats recurrent_ppo_loss_gradients(recurrent_actor_critic& net, ppo_workspace& work,
                                            const recurrent_ppo_minibatch& batch, const ppo_config& config);

/// recurrent_ppo_loss_gradients(), then the gradients clipped to
/// config.max_grad_norm (where > 0) and one Adam step of size `learning_rate`.
ppo_step_stats recurrent_ppo_step(recurrent_actor_critic& net, adam& optimiser, ppo_workspace& work,
                                  const recurrent_ppo_minibatch& batch, const ppo_config& config,
                                  double learning_rate);

}  // namespace coral::learners::fused
