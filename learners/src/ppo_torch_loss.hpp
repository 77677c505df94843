#pragma once
// Private: PPO's minibatch loss in torch operators, as the torch learner's
// minibatch body (ppo_torch.cpp) computes it: the clipped surrogate (the
// larger of the two terms), the value loss (clipped as configured), the
// entropy bonus, advantages normalised per minibatch. The fused engine's
// oracle test and benchmark run it as the torch side; only torch
// translation units include it.

#include <torch/torch.h>

#include "actor_critic.hpp"
#include "coral/learners/ppo_learner.hpp"

namespace coral::learners::detail {

/// A minibatch's loss and the tensors on the way to it (all still in the graph).
struct ppo_torch_loss {
  torch::Tensor actor_out;  ///< [B, heads]
  torch::Tensor log_prob;   ///< [B]
  torch::Tensor entropy;    ///< [B]
  torch::Tensor value;      ///< [B]
  torch::Tensor log_ratio;  ///< [B]: log_prob − the acting policy's
  torch::Tensor ratio;      ///< [B]
  torch::Tensor policy;     ///< the surrogate, a scalar
  torch::Tensor value_loss; ///< a scalar
  torch::Tensor mean_entropy;
  torch::Tensor loss;       ///< policy − entropy_coef × mean_entropy + value_coef × value_loss
};

/// The loss of rows `x` [B, in] with actions `discrete` [B, heads] (int64)
/// and `continuous` [B, c], the acting policy's `old_log_prob` and
/// `old_value` [B], `advantages` and `returns` [B], and the action masks
/// (bool [B, logits], or undefined: none).
inline ppo_torch_loss ppo_loss(actor_critic_impl& net, const torch::Tensor& x, const torch::Tensor& discrete,
                               const torch::Tensor& continuous, const torch::Tensor& old_log_prob,
                               const torch::Tensor& old_value, torch::Tensor advantages, const torch::Tensor& returns,
                               const ppo_config& c, const torch::Tensor& masks = {}) {
  ppo_torch_loss l;
  l.actor_out = net.actor_out(x);
  std::tie(l.log_prob, l.entropy) = net.log_prob_entropy(l.actor_out, discrete, continuous, masks);
  l.value = net.value(x);
  if (c.normalize_advantages) advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8);
  l.log_ratio = l.log_prob - old_log_prob;
  l.ratio = l.log_ratio.exp();
  l.policy = torch::max(-advantages * l.ratio, -advantages * torch::clamp(l.ratio, 1.0 - c.clip, 1.0 + c.clip)).mean();
  if (c.clip_value_loss) {
    auto clipped = old_value + torch::clamp(l.value - old_value, -c.clip, c.clip);
    l.value_loss = 0.5 * torch::max((l.value - returns).pow(2), (clipped - returns).pow(2)).mean();
  } else {
    l.value_loss = 0.5 * (l.value - returns).pow(2).mean();
  }
  l.mean_entropy = l.entropy.mean();
  l.loss = l.policy - c.entropy_coef * l.mean_entropy + c.value_coef * l.value_loss;
  return l;
}

}  // namespace coral::learners::detail
