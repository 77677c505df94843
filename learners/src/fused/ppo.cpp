// PPO's minibatch step on the fused engine (coral/learners/fused/ppo.hpp).
//
// The loss, as learners/src/ppo_torch.cpp writes it with torch operators,
// and its gradient with respect to each row's log probability, entropy and
// value, written out. Where torch takes max(a, b) of two terms, its
// backward gives the gradient to the larger, and half to each on a tie; the
// surrogate's two terms tie whenever the ratio is inside the clip range,
// and so do the value loss's when the value moved less than the clip.
// clamp() passes the gradient where min ≤ x ≤ max.

#include "coral/learners/fused/ppo.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/learners/errors.hpp"

namespace coral::learners::fused {
namespace {

// d max(a, b) / d a, torch's way: 1, 0, or ½ on a tie.
float share_of_max(float a, float b) noexcept { return a > b ? 1.0f : (a < b ? 0.0f : 0.5f); }

}  // namespace

ppo_step_stats ppo_loss_gradients(actor_critic& net, ppo_workspace& work, const ppo_minibatch& batch,
                                  const ppo_config& config) {
  if (batch.rows > work.advantages.size()) {
    throw usage_error(fmt::format(fmt::runtime(errors::fused_too_many_rows), batch.rows, work.advantages.size()));
  }
  net.forward(batch.observations.data(), batch.rows);
  return ppo_loss_after_forward(net, work, batch, config, nullptr);
}

ppo_step_stats ppo_loss_after_forward(actor_critic& net, ppo_workspace& work, const ppo_minibatch& batch,
                                      const ppo_config& config, float* d_input) {
  const std::size_t rows = batch.rows;
  if (rows > work.advantages.size()) {
    throw usage_error(fmt::format(fmt::runtime(errors::fused_too_many_rows), rows, work.advantages.size()));
  }
  net.log_prob_entropy(batch.discrete_actions.data(), batch.continuous_actions.data(),
                       batch.action_masks.empty() ? nullptr : batch.action_masks.data());
  const auto logp = net.log_probs();
  const auto entropy = net.entropies();
  const auto value = net.values();

  // Advantages, normalised by the minibatch's mean and unbiased std.
  float* adv = work.advantages.data();
  std::copy_n(batch.advantages.data(), rows, adv);
  if (config.normalize_advantages) {
    double sum = 0;
    for (std::size_t i = 0; i < rows; ++i) sum += adv[i];
    const auto mean = static_cast<float>(sum / static_cast<double>(rows));
    double squares = 0;
    for (std::size_t i = 0; i < rows; ++i) squares += static_cast<double>(adv[i] - mean) * (adv[i] - mean);
    const auto std = static_cast<float>(std::sqrt(squares / static_cast<double>(rows - 1)));
    const float denominator = std + 1e-8f;
    for (std::size_t i = 0; i < rows; ++i) adv[i] = (adv[i] - mean) / denominator;
  }

  const auto lo = static_cast<float>(1.0 - config.clip), hi = static_cast<float>(1.0 + config.clip);
  const auto clip = static_cast<float>(config.clip);
  const float inv_rows = 1.0f / static_cast<float>(rows);
  const auto value_scale = static_cast<float>(config.value_coef) * 0.5f * inv_rows;
  const float entropy_grad = -static_cast<float>(config.entropy_coef) * inv_rows;
  double pg = 0, vl = 0, ent = 0, kl = 0, clipped = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    // The surrogate: max(−A r, −A clamp(r)).
    const float log_ratio = logp[i] - batch.log_probs[i];
    const float ratio = std::exp(log_ratio);
    const float bounded = std::clamp(ratio, lo, hi);
    const float unclipped_term = -adv[i] * ratio, clipped_term = -adv[i] * bounded;
    const float passes = (ratio >= lo && ratio <= hi) ? 1.0f : 0.0f;
    const float share = share_of_max(unclipped_term, clipped_term);
    const float d_ratio = -adv[i] * (share + (1.0f - share) * passes);
    work.d_log_prob[i] = d_ratio * ratio * inv_rows;
    pg += std::max(unclipped_term, clipped_term);
    // The value loss: 0.5 (v − R)², or with clipping 0.5 max((v − R)², (v_clipped − R)²).
    const float error = value[i] - batch.returns[i];
    if (config.clip_value_loss) {
      const float moved = value[i] - batch.values[i];
      const float v_clipped = batch.values[i] + std::clamp(moved, -clip, clip);
      const float clipped_error = v_clipped - batch.returns[i];
      const float e1 = error * error, e2 = clipped_error * clipped_error;
      const float s = share_of_max(e1, e2);
      const float through = (moved >= -clip && moved <= clip) ? 1.0f : 0.0f;
      work.d_value[i] = value_scale * (s * 2.0f * error + (1.0f - s) * 2.0f * clipped_error * through);
      vl += std::max(e1, e2);
    } else {
      work.d_value[i] = value_scale * 2.0f * error;
      vl += error * error;
    }
    work.d_entropy[i] = entropy_grad;
    ent += entropy[i];
    kl += (ratio - 1.0f) - log_ratio;
    clipped += std::fabs(ratio - 1.0f) > clip ? 1.0 : 0.0;
  }
  net.backward(work.d_log_prob.data(), work.d_entropy.data(), work.d_value.data(), d_input);

  const auto n = static_cast<double>(rows);
  ppo_step_stats stats;
  stats.policy_loss = pg / n;
  stats.value_loss = 0.5 * vl / n;
  stats.entropy = ent / n;
  stats.approx_kl = kl / n;
  stats.clip_fraction = clipped / n;
  stats.loss = stats.policy_loss - config.entropy_coef * stats.entropy + config.value_coef * stats.value_loss;
  return stats;
}

ppo_step_stats ppo_step(actor_critic& net, adam& optimiser, ppo_workspace& work, const ppo_minibatch& batch,
                        const ppo_config& config, double learning_rate) {
  auto stats = ppo_loss_gradients(net, work, batch, config);
  if (config.max_grad_norm > 0) stats.grad_norm = clip_grad_norm(net.gradients(), config.max_grad_norm);
  optimiser.step(net.parameters(), net.gradients(), learning_rate);
  return stats;
}

}  // namespace coral::learners::fused
