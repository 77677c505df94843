// DQN's Q-network and update on the fused engine (coral/learners/fused/q_network.hpp).
//
// The loss, as learners/src/dqn_torch.cpp writes it with torch operators:
// mean(w × huber(Q(s, a), y)) with w the importance weights divided by
// their largest (at least 1e-12), y = return + discount × bootstrap from
// the target (of the online network's best action with double DQN, else of
// the target's own). Its gradient with respect to Q(s, a) is w × h'(Q − y)
// / rows, h'(x) = x clamped to ±delta (torch's huber_loss backward); the
// next observations' pass carries none.

#include "coral/learners/fused/q_network.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/core/rng.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/fused/actor_critic.hpp"
#include "../legal_actions.hpp"

namespace coral::learners::fused {
namespace {

std::vector<std::size_t> hidden_of(std::span<const std::size_t> widths) {
  return {widths.begin() + 1, widths.end() - 1};
}

// ReLU after a convolution (MinAtar's network), tanh in an MLP.
activation activation_of(const conv_spec& conv) noexcept { return conv.empty() ? activation::tanh : activation::relu; }

}  // namespace

q_network::q_network(std::span<const std::size_t> widths, std::size_t max_rows, const conv_spec& conv)
    : widths_(widths.begin(), widths.end()),
      conv_(conv),
      input_dim_(conv.empty() ? widths.front() : conv.height * conv.width * conv.channels),
      max_rows_(max_rows),
      online_conv_(conv, 0, 2 * max_rows),
      target_conv_(conv, 0, max_rows),
      online_(make_mlp(widths.front(), hidden_of(widths), widths.back(), online_conv_.parameter_count(), 2 * max_rows,
                       activation_of(conv))),
      target_(make_mlp(widths.front(), hidden_of(widths), widths.back(), online_conv_.parameter_count(), max_rows,
                       activation_of(conv))) {
  params_.resize(online_conv_.parameter_count() + parameter_count(online_));
  grads_.resize(params_.size());
  target_params_.resize(params_.size());
  input_.resize(2 * max_rows * input_dim_);
  if (!conv.empty()) d_conv_.resize(max_rows * widths.front());
  d_q_.resize(max_rows * widths.back());
  weights_.resize(max_rows);
}

void q_network::sync_target() noexcept { std::copy(params_.begin(), params_.end(), target_params_.begin()); }

std::span<const float> q_network::q_values(const float* x, std::size_t rows) {
  if (rows > 2 * max_rows_) {
    throw usage_error(fmt::format(fmt::runtime(errors::fused_too_many_rows), rows, 2 * max_rows_));
  }
  const float* features = online_conv_.forward(params_.data(), x, rows);
  return {forward(online_, params_.data(), features, rows), rows * widths_.back()};
}

std::vector<float> init_q_network(std::span<const std::size_t> widths, std::uint64_t seed, const conv_spec& conv) {
  const conv_stack convolutions(conv, 0, 0);
  const auto net = make_mlp(widths.front(), hidden_of(widths), widths.back(), convolutions.parameter_count(), 0);
  std::vector<float> flat(convolutions.parameter_count() + parameter_count(net), 0.0f);
  // Each matrix from a stream of its own: (seed, its index), the convolutions' first.
  std::uint64_t stream = 0;
  for (const auto& layer : convolutions.layers()) {
    orthogonal(flat.data() + layer.offset, layer.out_c, layer.patch(), std::sqrt(2.0),
               coral::rng(coral::env_seed{seed, stream++})());
  }
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    const auto& layer = net.layers[l];
    const double gain = l + 1 < net.layers.size() ? std::sqrt(2.0) : 1.0;
    orthogonal(flat.data() + layer.offset, layer.out, layer.in, gain, coral::rng(coral::env_seed{seed, stream++})());
  }
  return flat;
}

// The update's access to the network's buffers.
struct dqn_access {
  static dqn_step_stats loss_gradients(q_network& net, const dqn_batch& b, const dqn_config& c,
                                       std::span<float> td_errors) {
    const std::size_t B = b.rows, D = net.input_dim_, A = net.widths_.back();
    if (B > net.max_rows_) throw usage_error(fmt::format(fmt::runtime(errors::fused_too_many_rows), B, net.max_rows_));
    // One online pass over observations and next observations, as torch::cat.
    std::copy_n(b.observations.data(), B * D, net.input_.data());
    std::copy_n(b.next_observations.data(), B * D, net.input_.data() + B * D);
    const float* features = net.online_conv_.forward(net.params_.data(), net.input_.data(), 2 * B);
    const float* q_all = forward(net.online_, net.params_.data(), features, 2 * B);
    const float* next_features = net.target_conv_.forward(net.target_params_.data(), b.next_observations.data(), B);
    const float* q_next_target = forward(net.target_, net.target_params_.data(), next_features, B);

    float largest = 0.0f;
    for (std::size_t i = 0; i < B; ++i) largest = i == 0 ? b.weights[i] : std::max(largest, b.weights[i]);
    largest = std::max(largest, 1e-12f);
    const float delta = static_cast<float>(c.huber_delta);
    std::fill_n(net.d_q_.data(), B * A, 0.0f);
    double loss = 0, q_sum = 0, td_sum = 0;
    for (std::size_t i = 0; i < B; ++i) {
      const float* next_online = q_all + (B + i) * A;
      const float* next_target = q_next_target + i * A;
      float bootstrap = 0.0f;
      if (b.next_masks.empty()) {
        if (c.double_dqn) {
          bootstrap = next_target[std::max_element(next_online, next_online + A) - next_online];
        } else {
          bootstrap = *std::max_element(next_target, next_target + A);
        }
      } else {
        // Over the legal actions only (the first of equals, as argmax picks).
        const std::size_t best =
            learners::detail::best_legal(c.double_dqn ? next_online : next_target, b.next_masks.data() + i * A, A);
        bootstrap = best == A ? 0.0f : next_target[best];
      }
      const float y = b.returns[i] + b.discounts[i] * bootstrap;
      const auto a = static_cast<std::size_t>(b.actions[i]);
      const float q = q_all[i * A + a];
      const float w = b.weights[i] / largest;
      const float x = q - y;
      const float ax = std::fabs(x);
      const float huber = ax < delta ? 0.5f * x * x : delta * (ax - 0.5f * delta);
      net.d_q_[i * A + a] = w * std::clamp(x, -delta, delta) / static_cast<float>(B);
      loss += static_cast<double>(w) * huber;
      q_sum += q;
      td_errors[i] = std::fabs(y - q);
      td_sum += td_errors[i];
    }
    // The observations' rows come first: the backward of the pass's first B rows.
    const bool conv = !net.online_conv_.empty();
    backward(net.online_, net.params_.data(), net.grads_.data(), features, net.d_q_.data(), B,
             conv ? net.d_conv_.data() : nullptr);
    net.online_conv_.backward(net.grads_.data(), net.d_conv_.data(), B);
    const auto n = static_cast<double>(B);
    return {loss / n, q_sum / n, td_sum / n, 0.0};
  }
};

dqn_step_stats dqn_loss_gradients(q_network& net, const dqn_batch& batch, const dqn_config& config,
                                  std::span<float> td_errors) {
  return dqn_access::loss_gradients(net, batch, config, td_errors);
}

dqn_step_stats dqn_step(q_network& net, adam& optimiser, const dqn_batch& batch, const dqn_config& config,
                        std::span<float> td_errors) {
  auto stats = dqn_loss_gradients(net, batch, config, td_errors);
  if (config.max_grad_norm > 0) stats.grad_norm = clip_grad_norm(net.gradients(), config.max_grad_norm);
  optimiser.step(net.parameters(), net.gradients(), config.learning_rate);
  return stats;
}

}  // namespace coral::learners::fused
