// Recurrent PPO's minibatch step on the fused engine
// (coral/learners/fused/recurrent_ppo.hpp).

#include "coral/learners/fused/recurrent_ppo.hpp"

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/learners/errors.hpp"

namespace coral::learners::fused {

ppo_step_stats recurrent_ppo_loss_gradients(recurrent_actor_critic& net, ppo_workspace& work,
                                            const recurrent_ppo_minibatch& batch, const ppo_config& config) {
  const std::size_t n = batch.rows * batch.steps;
  if (batch.steps_of.rows != n) {
    throw usage_error(fmt::format(fmt::runtime(errors::fused_recurrent_minibatch_shape), batch.rows, batch.steps,
                                  batch.steps_of.rows));
  }
  if (n > work.advantages.size()) {
    throw usage_error(fmt::format(fmt::runtime(errors::fused_too_many_rows), n, work.advantages.size()));
  }
  net.forward(batch.steps_of.observations.data(), batch.keep.data(), batch.h0.data(), batch.c0.data(), batch.rows,
              batch.steps, true);
  const auto stats = ppo_loss_after_forward(net.heads(), work, batch.steps_of, config, net.feature_gradients());
  net.backward_from_features();
  return stats;
}

ppo_step_stats recurrent_ppo_step(recurrent_actor_critic& net, adam& optimiser, ppo_workspace& work,
                                  const recurrent_ppo_minibatch& batch, const ppo_config& config,
                                  double learning_rate) {
  auto stats = recurrent_ppo_loss_gradients(net, work, batch, config);
  if (config.max_grad_norm > 0) stats.grad_norm = clip_grad_norm(net.gradients(), config.max_grad_norm);
  optimiser.step(net.parameters(), net.gradients(), learning_rate);
  return stats;
}

}  // namespace coral::learners::fused
