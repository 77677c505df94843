// R2D2's update on the fused engine (coral/learners/fused/r2d2.hpp).
//
// As learners/src/r2d2_learner.cpp: both networks unroll the burn-in
// slots without gradient from the stored state; the online one then
// unrolls slots [burn_in, L] (the last is the bootstrap observation) for
// the backward, the target one without. The loss is
// mean_i(w_i · ½ Σ_t δ_it² / max(1, Σ_t m_it)) with δ = (target − Q) · m,
// w scaled to a largest of 1, so d loss / d Q_it = −w_i δ_it m_it /
// (B max(1, Σ_t m_it)) at the action taken; the bootstrap slot gets none.

#include "coral/learners/fused/r2d2.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/core/rng.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/fused/actor_critic.hpp"
#include "coral/learners/r2d2_math.hpp"
#include "../legal_actions.hpp"

namespace coral::learners::fused {

recurrent_q_network::recurrent_q_network(const network_spec& spec, std::size_t max_rows, std::size_t max_length)
    : in_(spec.input_dim()),
      width_(spec.lstm),
      actions_(spec.nvec.empty() ? 0 : static_cast<std::size_t>(spec.nvec.front())),
      max_rows_(max_rows),
      max_length_(max_length),
      online_(spec.input_dim(), spec.hidden, spec.lstm, 0, max_rows, max_length + 1, spec.conv),
      target_(spec.input_dim(), spec.hidden, spec.lstm, 0, max_rows, max_length + 1, spec.conv),
      head_{spec.lstm, actions_, online_.parameter_count()} {
  params_.resize(online_.parameter_count() + head_.size());
  grads_.resize(params_.size());
  target_params_.resize(params_.size());
  const std::size_t slots = (max_length + 1) * max_rows, H = width_;
  x_.resize(slots * in_);
  keep_.resize(slots);
  h0_.resize(max_rows * H);
  c0_.resize(max_rows * H);
  for (auto* v : {&burn_h_, &burn_c_, &target_burn_h_, &target_burn_c_, &hs_, &cs_, &target_hs_, &target_cs_, &d_h_}) {
    v->resize(slots * H);
  }
  q_.resize(slots * actions_);
  target_q_.resize(slots * actions_);
  d_q_.resize(slots * actions_);
  bootstrap_.resize(max_rows * (max_length + 1));
  targets_.resize(max_rows * max_length);
  mask_.resize(max_rows * max_length);
  td_.resize(max_rows * max_length);
}

void recurrent_q_network::sync_target() noexcept {
  std::copy(params_.begin(), params_.end(), target_params_.begin());
}

r2d2_update_stats recurrent_q_network::loss_gradients(replay::sequence_batch& b, const dqn_config& dqn,
                                                      const r2d2_config& config) {
  const std::size_t B = b.size, L = b.layout.length, BI = b.layout.burn_in, D = in_, H = width_, A = actions_;
  const std::size_t T = L + 1 - BI;  // the trained slots and the bootstrap slot
  const auto started = std::chrono::steady_clock::now();
  if (B > max_rows_ || L > max_length_) {
    throw usage_error(fmt::format(fmt::runtime(errors::fused_too_many_rows), B * (L + 1), max_rows_ * (max_length_ + 1)));
  }
  // Time-major observations and keep masks; slot L continues slot L − 1's episode.
  for (std::size_t i = 0; i < B; ++i) {
    for (std::size_t t = 0; t <= L; ++t) {
      std::copy_n(b.observations.data() + (i * (L + 1) + t) * D, D, x_.data() + (t * B + i) * D);
      const bool first = t < L && (b.flags[i * L + t] & replay::slot_first) != 0;
      keep_[t * B + i] = first ? 0.0f : 1.0f;
    }
    std::copy_n(b.states.data() + i * 2 * H, H, h0_.data() + i * H);
    std::copy_n(b.states.data() + i * 2 * H + H, H, c0_.data() + i * H);
  }
  // Burn-in, both networks, no gradient.
  const float *h_on = h0_.data(), *c_on = c0_.data(), *h_tg = h0_.data(), *c_tg = c0_.data();
  if (BI > 0) {
    online_.forward(params_.data(), x_.data(), keep_.data(), h0_.data(), c0_.data(), B, BI, burn_h_.data(),
                    burn_c_.data(), false);
    target_.forward(target_params_.data(), x_.data(), keep_.data(), h0_.data(), c0_.data(), B, BI,
                    target_burn_h_.data(), target_burn_c_.data(), false);
    h_on = burn_h_.data() + (BI - 1) * B * H;
    c_on = burn_c_.data() + (BI - 1) * B * H;
    h_tg = target_burn_h_.data() + (BI - 1) * B * H;
    c_tg = target_burn_c_.data() + (BI - 1) * B * H;
  }
  const double burn_in_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const float* x_rest = x_.data() + BI * B * D;
  const float* keep_rest = keep_.data() + BI * B;
  online_.forward(params_.data(), x_rest, keep_rest, h_on, c_on, B, T, hs_.data(), cs_.data(), true);
  target_.forward(target_params_.data(), x_rest, keep_rest, h_tg, c_tg, B, T, target_hs_.data(), target_cs_.data(),
                  false);
  dense_forward(head_, params_.data(), hs_.data(), T * B, q_.data());
  dense_forward(head_, target_params_.data(), target_hs_.data(), T * B, target_q_.data());

  // Double-Q bootstrap values at observation slots [BI, L], batch-major:
  // the online network's best action there (its best legal one, where the
  // batch has masks and the slot a legal action), scored by the target.
  std::fill_n(bootstrap_.data(), B * (L + 1), 0.0f);
  const bool masked = dqn.action_masks && b.layout.mask_dim > 0;
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t i = 0; i < B; ++i) {
      const float* q = q_.data() + (t * B + i) * A;
      std::size_t best = masked ? learners::detail::best_legal(q, b.masks.data() + (i * (L + 1) + BI + t) * A, A) : A;
      if (best == A) best = static_cast<std::size_t>(std::max_element(q, q + A) - q);
      bootstrap_[i * (L + 1) + BI + t] = target_q_[(t * B + i) * A + best];
    }
  }
  const std::span<float> targets(targets_.data(), B * L), mask(mask_.data(), B * L);
  nstep_batch_targets(B, L, b.rewards, b.flags, std::span<const float>(bootstrap_.data(), B * (L + 1)),
                      {.gamma = dqn.gamma, .n = dqn.n_step, .eps = config.rescale_epsilon, .burn_in = BI}, targets,
                      mask);

  float largest = 0.0f;
  for (std::size_t i = 0; i < B; ++i) largest = i == 0 ? b.weights[i] : std::max(largest, b.weights[i]);
  largest = std::max(largest, 1e-12f);
  std::fill_n(d_q_.data(), T * B * A, 0.0f);
  double loss = 0, q_sum = 0, td_sum = 0, count = 0;
  float q_max = q_.empty() ? 0.0f : q_[0];
  for (std::size_t r = 0; r < T * B * A; ++r) q_max = std::max(q_max, q_[r]);
  b.priorities.resize(B);
  const std::size_t W = L - BI;
  for (std::size_t i = 0; i < B; ++i) {
    float masked = 0.0f;
    for (std::size_t t = BI; t < L; ++t) masked += mask_[i * L + t];
    const float denominator = std::max(masked, 1.0f);
    const float w = b.weights[i] / largest;
    double squares = 0;
    for (std::size_t t = BI; t < L; ++t) {
      const std::size_t slot = t - BI, at = (slot * B + i) * A + static_cast<std::size_t>(b.actions[i * L + t]);
      const float m = mask_[i * L + t];
      const float td = (targets_[i * L + t] - q_[at]) * m;
      td_[i * W + slot] = std::fabs(td);
      squares += static_cast<double>(td) * td;
      d_q_[at] = -w * td * m / (static_cast<float>(B) * denominator);
      q_sum += static_cast<double>(q_[at]) * m;
      td_sum += std::fabs(td);
    }
    count += masked;
    loss += static_cast<double>(w) * 0.5 * squares / denominator;
    b.priorities[i] = sequence_priority(std::span<const float>(td_.data() + i * W, W),
                                        std::span<const float>(mask_.data() + i * L + BI, W), config.priority_eta);
  }
  dense_backward(head_, params_.data(), grads_.data(), hs_.data(), d_q_.data(), T * B, d_h_.data());
  online_.backward(params_.data(), grads_.data(), d_h_.data(), nullptr);

  r2d2_update_stats out;
  out.burn_in_seconds = burn_in_seconds;
  count = std::max(1.0, count);
  out.base.td_loss = loss / static_cast<double>(B);
  out.base.mean_q = value_unrescale(q_sum / count, config.rescale_epsilon);
  out.base.mean_abs_td = td_sum / count;
  out.q_max = value_unrescale(q_max, config.rescale_epsilon);
  return out;
}

std::vector<float> init_recurrent_q_network(const network_spec& spec, std::uint64_t seed) {
  const std::size_t H = spec.lstm;
  const std::size_t A = spec.nvec.empty() ? 0 : static_cast<std::size_t>(spec.nvec.front());
  // The trunk, then the head's weight [A][H] and bias [A] (lstm_trunk.hpp).
  const std::size_t head = lstm_trunk(spec.input_dim(), spec.hidden, H, 0, 0, 0, spec.conv).parameter_count();
  std::vector<float> flat(head + A * H + A, 0.0f);
  std::uint64_t stream = 0;
  init_lstm_trunk(flat.data(), 0, spec.input_dim(), spec.hidden, H, seed, stream, spec.conv);
  orthogonal(flat.data() + head, A, H, 1.0, coral::rng(coral::env_seed{seed, stream++})());
  return flat;
}

r2d2_update_stats r2d2_step(recurrent_q_network& net, adam& optimiser, replay::sequence_batch& batch,
                            const dqn_config& dqn, const r2d2_config& config) {
  auto stats = net.loss_gradients(batch, dqn, config);
  if (dqn.max_grad_norm > 0) stats.grad_norm = clip_grad_norm(net.gradients(), dqn.max_grad_norm);
  optimiser.step(net.parameters(), net.gradients(), dqn.learning_rate);
  return stats;
}

}  // namespace coral::learners::fused
