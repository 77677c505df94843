#pragma once
// Private: the built-in networks' flat parameter layout, torch-free. The
// learners publish their parameters as one float vector in their torch
// twins' order (torch::nn::Module::parameters(): a module's own first, then
// its children in registration order; per Linear its weight [out][in], then
// its bias; per LSTMCell weight_ih [4H][in], weight_hh [4H][H], bias_ih,
// bias_hh). The acting policies read that vector into their dense kernels
// here, so that they, the descriptors and the `coral` command need no torch.
//
//   actor-critic, MLP:      log_std (Box elements), actor MLP, critic MLP
//   actor-critic, conv:     log_std, encoder, actor head, critic head
//   actor-critic, LSTM:     log_std, trunk, actor head, critic head
//   encoder:                convolutions (per layer weight [out][in][k][k],
//                           bias), dense layers (input -> hidden..., the
//                           activation after each: tanh, ReLU after convolutions)
//   trunk:                  encoder, LSTM cell
//   Q-network (DQN):        convolutions, MLP (-> hidden... -> actions)
//   recurrent Q (R2D2):     trunk, head (lstm -> actions)

#include <cstddef>
#include <span>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/core/error.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/network.hpp"
#include "dense.hpp"

namespace coral::learners::detail {

/// Whether the actor and critic read an encoder of their own (the
/// convolutions and hidden layers) rather than the input or an LSTM.
inline bool shares_encoder(const network_spec& s) noexcept { return s.lstm == 0 && !s.conv.empty(); }

/// The encoder's dense widths: what they read (the convolutions' output or
/// the input), then every hidden width (one element, no layer, without
/// hidden widths).
inline std::vector<std::size_t> encoder_widths(const network_spec& s) {
  std::vector<std::size_t> w{s.dense_input_dim()};
  w.insert(w.end(), s.hidden.begin(), s.hidden.end());
  return w;
}

/// Floats of the encoder of `s`: its convolutions and dense layers.
inline std::size_t encoder_parameter_count(const network_spec& s) {
  return s.conv.parameter_count() + dense_parameter_count(encoder_widths(s));
}

/// The actor's widths: its MLP, or its one-layer head on an LSTM or a shared encoder.
inline std::vector<std::size_t> actor_widths(const network_spec& s) {
  std::vector<std::size_t> w{s.lstm > 0 ? s.lstm : shares_encoder(s) ? encoder_widths(s).back() : s.input_dim()};
  if (s.lstm == 0 && !shares_encoder(s)) w.insert(w.end(), s.hidden.begin(), s.hidden.end());
  w.push_back(s.logits_dim() + s.continuous_dim());
  return w;
}

/// The critic's widths, as actor_widths() with one output.
inline std::vector<std::size_t> critic_widths(const network_spec& s) {
  auto w = actor_widths(s);
  w.back() = 1;
  return w;
}

/// Floats of the recurrent trunk of `s` (s.lstm > 0).
inline std::size_t trunk_parameter_count(const network_spec& s) {
  const std::size_t g = 4 * s.lstm;
  return encoder_parameter_count(s) + g * encoder_widths(s).back() + g * s.lstm + 2 * g;
}

/// Floats of the actor-critic of `s` (parameter_count()).
inline std::size_t actor_critic_parameter_count(const network_spec& s) {
  const std::size_t below_heads =
      s.lstm > 0 ? trunk_parameter_count(s) : shares_encoder(s) ? encoder_parameter_count(s) : 0;
  return s.continuous_dim() + below_heads + dense_parameter_count(actor_widths(s)) +
         dense_parameter_count(critic_widths(s));
}

/// Reads the trunk of `s` from the front of `flat`; returns the floats read.
inline std::size_t load_trunk(dense_trunk& out, std::span<const float> flat, const network_spec& s) {
  const auto enc = encoder_widths(s);
  const std::size_t at = out.encoder.load_flat(flat, s.conv, enc);
  const std::size_t in = enc.back(), H = s.lstm, g = 4 * H;
  const float* w_ih = flat.data() + at;
  const float* w_hh = w_ih + g * in;
  const float* b_ih = w_hh + g * H;
  const float* b_hh = b_ih + g;
  out.cell.load(in, H, w_ih, w_hh, b_ih, b_hh);
  return at + g * in + g * H + 2 * g;
}

/// The actor-critic's kernels, as the acting side runs them.
struct actor_critic_kernels {
  dense_mlp actor;
  dense_mlp critic;
  dense_trunk trunk;            // with an LSTM
  dense_encoder encoder;        // with convolutions and no LSTM (shares_encoder())
  std::vector<float> log_std;   // Box elements

  /// Reads the parameters of `s` (actor_critic_parameter_count() floats;
  /// usage_error naming `owner` otherwise).
  void load(std::span<const float> flat, const network_spec& s, std::string_view owner) {
    const auto expected = actor_critic_parameter_count(s);
    if (flat.size() != expected) {
      throw usage_error(fmt::format("{}: {} weights given, the network has {}", owner, flat.size(), expected));
    }
    log_std.assign(flat.begin(), flat.begin() + static_cast<std::ptrdiff_t>(s.continuous_dim()));
    std::size_t at = s.continuous_dim();
    if (s.lstm > 0) at += load_trunk(trunk, flat.subspan(at), s);
    if (shares_encoder(s)) at += encoder.load_flat(flat.subspan(at), s.conv, encoder_widths(s));
    at += actor.load_flat(flat.subspan(at), actor_widths(s));
    critic.load_flat(flat.subspan(at), critic_widths(s));
  }
};

/// The number of actions of `spec`'s one Discrete action space (R2D2;
/// config_error otherwise).
inline std::size_t r2d2_action_count(const network_spec& spec) {
  if (spec.nvec.size() != 1 || spec.continuous_dim() != 0) {
    throw config_error(fmt::format(fmt::runtime(errors::r2d2_needs_discrete),
                                   fmt::format("{} heads and {} Box elements", spec.nvec.size(), spec.continuous_dim())));
  }
  return static_cast<std::size_t>(spec.nvec.front());
}

/// Floats of R2D2's recurrent Q-network of `s`.
inline std::size_t recurrent_q_parameter_count(const network_spec& s) {
  const std::size_t head[] = {s.lstm, r2d2_action_count(s)};
  return trunk_parameter_count(s) + dense_parameter_count(head);
}

}  // namespace coral::learners::detail
