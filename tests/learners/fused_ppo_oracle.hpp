#pragma once
// What the PPO oracle tests (fused_oracle_test.cpp, the MLP network;
// fused_recurrent_ppo_oracle_test.cpp, the recurrent one) share: their
// loss's settings, and the comparison of every parameter's gradient
// followed by one clipping and Adam step on each side. Include after torch
// and Catch2, as fused_oracle_support.hpp.

#include "../../learners/src/actor_critic.hpp"
#include "../../learners/src/adam.hpp"

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "coral/learners/fused/optim.hpp"
#include "coral/learners/network.hpp"
#include "coral/learners/ppo_learner.hpp"
#include "fused_oracle_support.hpp"

namespace coral::test {

/// A network and minibatch shape of a PPO oracle case.
struct ppo_oracle_shape {
  std::string name;
  std::size_t in;                   ///< observation width
  std::vector<std::int32_t> nvec;   ///< categorical heads
  std::size_t continuous;           ///< Gaussian heads, in [-1, 1]
  std::vector<std::size_t> hidden;
  std::size_t rows;                 ///< the minibatch's rows (with an LSTM: its sequences)
  bool clip_value_loss;
  bool normalize_advantages;
  std::size_t lstm = 0;             ///< the LSTM's width (0: the MLP network)
  std::size_t steps = 1;            ///< with an LSTM: each sequence's steps
  bool masked = false;              ///< action masks: each value legal with probability 0.6, one at least per head
  learners::conv_spec conv{};       ///< convolutions (`in` is then their grid's floats)
};

/// The network spec of `s`.
inline learners::network_spec spec_of(const ppo_oracle_shape& s) {
  learners::network_spec spec;
  spec.raw_obs_dim = s.in;
  spec.nvec = s.nvec;
  spec.low.assign(s.continuous, -1.0f);
  spec.high.assign(s.continuous, 1.0f);
  spec.hidden = s.hidden;
  spec.lstm = s.lstm;
  spec.conv = s.conv;
  return spec;
}

/// The loss's settings of both oracle tests: clipping at 0.2, the
/// coefficients of the defaults, gradient clipping at 0.5.
inline learners::ppo_config oracle_ppo_config(bool clip_value_loss, bool normalize_advantages) {
  learners::ppo_config config;
  config.clip = 0.2;
  config.clip_value_loss = clip_value_loss;
  config.normalize_advantages = normalize_advantages;
  config.entropy_coef = 0.01;
  config.value_coef = 0.5;
  config.max_grad_norm = 0.5;
  return config;
}

/// A scalar to 1e-5 relative, with a floor of 1e-7 + 1e-5 × `scale`: the
/// magnitude of the terms it sums, where they nearly cancel
/// (fused_oracle_support.hpp's rule for a block, applied to a sum's terms).
inline void require_close(double got, double want, const std::string& what, double scale = 0) {
  INFO(what << ": fused " << got << ", torch " << want << " (terms of magnitude " << scale << ")");
  CHECK(std::fabs(got - want) <= 1e-5 * std::max(std::fabs(got), std::fabs(want)) + 1e-5 * scale + 1e-7);
}

/// After a backward on both sides: the engine's flat `gradients` against
/// `net`'s, parameter by parameter in ordered() order; then each side's
/// own gradients clipped to config.max_grad_norm (the norms compared) and
/// one Adam step of `lr`, and the engine's `parameters` after it against
/// `net`'s.
inline void check_gradients_and_step(std::span<float> parameters, std::span<float> gradients,
                                     learners::detail::actor_critic& net, learners::fused::adam& engine_adam,
                                     learners::detail::flat_adam& torch_adam, const learners::ppo_config& config,
                                     double lr) {
  std::size_t at = 0, index = 0;
  for (const auto& p : net->ordered()) {
    const auto n = static_cast<std::size_t>(p.numel());
    require_close(std::span<const float>(gradients).subspan(at, n), floats_of(p.grad()),
                  "gradient of parameter " + std::to_string(index));
    at += n;
    ++index;
  }
  REQUIRE(at == gradients.size());
  const double engine_norm = learners::fused::clip_grad_norm(gradients, config.max_grad_norm);
  const double torch_norm = learners::detail::clip_grad_norm(net->ordered(), config.max_grad_norm);
  require_close(engine_norm, torch_norm, "gradient norm");
  engine_adam.step(parameters, gradients, lr);
  torch_adam.step(net->ordered(), lr);
  require_close(parameters, learners::detail::flatten(*net), "parameters after clipping and Adam");
}

}  // namespace coral::test
