#pragma once
// Private: the torch modules shared by the policies and the learners. Only
// torch translation units include it.

#include <span>
#include <string_view>
#include <vector>

#include <torch/torch.h>

#include "coral/learners/network.hpp"
#include "learner_backends.hpp"
#include "dense.hpp"

namespace coral::learners::detail {

/// The convolutions of `conv` (torch::nn::Conv2d, no padding, ReLU after
/// each; orthogonal weights with gain √2, zero biases) over rows of a grid
/// laid out channel-last, [B, H·W·C]: the rows are permuted to torch's
/// [B, C, H, W] for the convolutions and their output back to channel-last,
/// [B, H'·W'·C'], so that the dense layers after them read the fused
/// engine's layout (fused/conv.hpp).
struct conv_layers_impl : torch::nn::Module {
  explicit conv_layers_impl(const conv_spec& conv);
  torch::Tensor forward(const torch::Tensor& x);
  conv_spec spec;
  torch::nn::Sequential layers{nullptr};
};
TORCH_MODULE_IMPL(conv_layers, conv_layers_impl);

/// A network's encoder, fused::encoder's twin: the convolutions of `conv`
/// (none for a flat input), then the `hidden` layers with the activation
/// after each, the last too (ReLU after convolutions, tanh otherwise;
/// orthogonal with gain √2, zero biases). Empty without either.
torch::nn::Sequential make_encoder(std::size_t in, const conv_spec& conv, const std::vector<std::size_t>& hidden);

/// The recurrent part of a network (`--lstm`): an encoder (make_encoder())
/// and an LSTM cell of width `lstm` (orthogonal weights, zero biases). The
/// recurrent actor-critic and R2D2's Q-network put their heads on it.
struct recurrent_trunk_impl : torch::nn::Module {
  recurrent_trunk_impl(std::size_t in, const std::vector<std::size_t>& hidden, std::size_t lstm,
                       const conv_spec& conv = {});

  /// The LSTM over T steps of B rows: `obs` [B, T, in], `resets` [B, T]
  /// (1: the state is zeroed before step t, a new episode), starting from
  /// `h` and `c` [B, lstm]. Returns the features (the cell's h after each
  /// step) and its c after each step, both [B, T, lstm].
  std::pair<torch::Tensor, torch::Tensor> unroll(const torch::Tensor& obs, const torch::Tensor& resets, torch::Tensor h,
                                                 torch::Tensor c);
  /// One step for B rows: `obs` [B, in] from `h`, `c` [B, lstm]; returns the new (h, c).
  std::pair<torch::Tensor, torch::Tensor> step(const torch::Tensor& obs, const torch::Tensor& h, const torch::Tensor& c);

  torch::nn::Sequential encoder{nullptr};  // empty without hidden layers
  torch::nn::LSTMCell lstm{nullptr};
};
TORCH_MODULE_IMPL(recurrent_trunk, recurrent_trunk_impl);

/// Separate actor and critic MLPs (tanh), orthogonal initialisation as in
/// the PPO implementation details (gain √2 hidden, 0.01 actor head, 1 critic
/// head, zero biases), and a state-independent log std for Box elements.
///
/// With spec.lstm the network is one recurrent trunk instead: an encoder of
/// the hidden layers (tanh after each), an LSTM cell (orthogonal weights,
/// zero biases), and linear actor and critic heads on its output, as in
/// CleanRL's recurrent PPO. actor_out()/value() are then for features (the
/// cell's h), which unroll() makes from observations.
///
/// With convolutions (spec.conv) and no LSTM, the actor and critic share an
/// encoder (make_encoder(): the convolutions, the hidden layers with ReLU)
/// and are one linear head each; actor_out()/value() take observations and
/// run the encoder first.
struct actor_critic_impl : torch::nn::Module {
  explicit actor_critic_impl(const network_spec& spec);

  /// Actor head output [B, logits_dim + continuous_dim] (logits, then means)
  /// of observations, or, with an LSTM, of features.
  torch::Tensor actor_out(const torch::Tensor& in) { return actor->forward(encoded(in)); }
  /// Values [B] of observations, or, with an LSTM, of features.
  torch::Tensor value(const torch::Tensor& in) { return critic->forward(encoded(in)).squeeze(-1); }
  /// The shared encoder's features of observations (with convolutions and no LSTM), else `in`.
  torch::Tensor encoded(const torch::Tensor& in) { return encoder ? encoder->forward(in) : in; }

  /// The trunk's unroll() of normalised observations (with an LSTM).
  std::pair<torch::Tensor, torch::Tensor> unroll(const torch::Tensor& obs, const torch::Tensor& resets, torch::Tensor h,
                                                 torch::Tensor c) {
    return trunk->unroll(obs, resets, std::move(h), std::move(c));
  }
  /// The trunk's step() (with an LSTM).
  std::pair<torch::Tensor, torch::Tensor> step(const torch::Tensor& obs, const torch::Tensor& h, const torch::Tensor& c) {
    return trunk->step(obs, h, c);
  }

  /// Log probabilities and entropies [B] of `discrete` [B, heads] (int64) and
  /// `continuous` [B, c] actions under the actor's output `out`. With
  /// `masks` (bool [B, logits_dim], true = legal; undefined: none), a
  /// masked logit is −∞: each head's distribution is over its legal values,
  /// and a masked logit gets no gradient.
  std::pair<torch::Tensor, torch::Tensor> log_prob_entropy(const torch::Tensor& out, const torch::Tensor& discrete,
                                                           const torch::Tensor& continuous,
                                                           const torch::Tensor& masks = {}) const;

  /// Parameters in a fixed order (the flat weights' layout).
  std::vector<torch::Tensor> ordered() const;

  network_spec spec;
  torch::nn::Sequential encoder{nullptr};  // shared by the heads: with convolutions and no LSTM
  torch::nn::Sequential actor{nullptr};    // the actor MLP, or with an LSTM or encoder its head (one Linear)
  torch::nn::Sequential critic{nullptr};   // likewise
  recurrent_trunk trunk{nullptr};          // with an LSTM
  torch::Tensor log_std;  // [continuous_dim], undefined if none
};
TORCH_MODULE_IMPL(actor_critic, actor_critic_impl);

/// An MLP in -> hidden (tanh, or ReLU where `relu`) -> out: orthogonal
/// initialisation with gain √2 for hidden layers and `head_gain` for the
/// last, zero biases.
torch::nn::Sequential make_mlp(std::size_t in, const std::vector<std::size_t>& hidden, std::size_t out,
                               double head_gain, bool relu = false);

/// DQN's Q-network of dense `widths` (q_network_widths()): the MLP (tanh),
/// or with convolutions the convolutions and then the MLP (ReLU), as
/// fused::q_network lays out its parameters; head gain 1.
torch::nn::Sequential make_q_network(const std::vector<std::size_t>& widths, const conv_spec& conv);

/// Copies the Linear layers of `seq` into `out` (the acting side's kernels).
void copy_dense(dense_mlp& out, const torch::nn::Sequential& seq);
/// Copies a trunk's encoder and cell into `out`.
void copy_trunk(dense_trunk& out, const recurrent_trunk_impl& trunk);

/// The flat weights of `params`, one after the other.
std::vector<float> flatten(const std::vector<torch::Tensor>& params);
/// Copies flat weights into `params`; usage_error naming `owner` if the sizes differ.
void load(const std::vector<torch::Tensor>& params, std::span<const float> weights, std::string_view owner);

/// The flat weights of `net`, in ordered() order.
std::vector<float> flatten(const actor_critic_impl& net);
/// Copies flat weights into `net` (sizes must match; usage_error otherwise).
void load(actor_critic_impl& net, std::span<const float> weights);

/// The torch backends (ppo_torch.cpp, dqn_torch.cpp, r2d2_torch.cpp);
/// torch_backend.cpp hands them to the learners' front ends.
std::unique_ptr<ppo_learner::backend> make_torch_ppo(const network_spec& spec, const ppo_config& config,
                                                     std::uint64_t seed, std::uint64_t total_steps);
std::unique_ptr<dqn_learner::backend> make_torch_dqn(const network_spec& spec, const dqn_config& config,
                                                     std::uint64_t seed);
std::unique_ptr<r2d2_learner::backend> make_torch_r2d2(const network_spec& spec, const dqn_config& dqn,
                                                       const r2d2_config& config, std::uint64_t seed);

}  // namespace coral::learners::detail
