// The torch twins of the built-in networks (actor_critic.hpp): the MLP
// actor-critic, the recurrent trunk and its LSTM recurrence as one autograd
// node, and their flat parameter order.

#include "actor_critic.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "coral/core/error.hpp"
#include "coral/learners/errors.hpp"

namespace coral::learners {

namespace detail {

torch::nn::Sequential make_mlp(std::size_t in, const std::vector<std::size_t>& hidden, std::size_t out, double head_gain,
                               bool relu) {
  torch::nn::Sequential seq;
  std::size_t width = in;
  auto add_linear = [&](std::size_t to, double gain) {
    torch::nn::Linear l(static_cast<std::int64_t>(width), static_cast<std::int64_t>(to));
    torch::nn::init::orthogonal_(l->weight, gain);
    torch::nn::init::zeros_(l->bias);
    seq->push_back(l);
    width = to;
  };
  for (auto h : hidden) {
    add_linear(h, std::sqrt(2.0));
    if (relu) {
      seq->push_back(torch::nn::ReLU());
    } else {
      seq->push_back(torch::nn::Tanh());
    }
  }
  add_linear(out, head_gain);
  return seq;
}

conv_layers_impl::conv_layers_impl(const conv_spec& conv) : spec(conv) {
  torch::NoGradGuard no_grad;
  layers = torch::nn::Sequential();
  std::size_t in = conv.channels;
  for (const auto& l : conv.layers) {
    torch::nn::Conv2d c(torch::nn::Conv2dOptions(static_cast<std::int64_t>(in), static_cast<std::int64_t>(l.channels),
                                                 static_cast<std::int64_t>(l.kernel))
                            .stride(static_cast<std::int64_t>(l.stride)));
    torch::nn::init::orthogonal_(c->weight, std::sqrt(2.0));
    torch::nn::init::zeros_(c->bias);
    layers->push_back(c);
    layers->push_back(torch::nn::ReLU());
    in = l.channels;
  }
  layers = register_module("layers", layers);
}

torch::Tensor conv_layers_impl::forward(const torch::Tensor& x) {
  const auto rows = x.size(0);
  const auto grid = x.reshape({rows, static_cast<std::int64_t>(spec.height), static_cast<std::int64_t>(spec.width),
                               static_cast<std::int64_t>(spec.channels)})
                        .permute({0, 3, 1, 2});
  return layers->forward(grid).permute({0, 2, 3, 1}).reshape({rows, -1});
}

torch::nn::Sequential make_encoder(std::size_t in, const conv_spec& conv, const std::vector<std::size_t>& hidden) {
  torch::nn::Sequential encoder;
  if (!conv.empty()) {
    encoder->push_back(conv_layers(conv));
    in = conv.output_dim();
  }
  // The dense part is an MLP whose last layer is a hidden one: the activation after it too.
  if (!hidden.empty()) {
    const bool relu = !conv.empty();
    encoder->extend(
        *make_mlp(in, std::vector<std::size_t>(hidden.begin(), hidden.end() - 1), hidden.back(), std::sqrt(2.0), relu));
    if (relu) {
      encoder->push_back(torch::nn::ReLU());
    } else {
      encoder->push_back(torch::nn::Tanh());
    }
  }
  return encoder;
}

torch::nn::Sequential make_q_network(const std::vector<std::size_t>& widths, const conv_spec& conv) {
  const std::vector<std::size_t> hidden(widths.begin() + 1, widths.end() - 1);
  if (conv.empty()) return make_mlp(widths.front(), hidden, widths.back(), 1.0);
  torch::nn::Sequential net;
  net->push_back(conv_layers(conv));
  net->extend(*make_mlp(widths.front(), hidden, widths.back(), 1.0, true));
  return net;
}

recurrent_trunk_impl::recurrent_trunk_impl(std::size_t in, const std::vector<std::size_t>& hidden, std::size_t width,
                                           const conv_spec& conv) {
  torch::NoGradGuard no_grad;
  const std::size_t features = !hidden.empty() ? hidden.back() : conv.empty() ? in : conv.output_dim();
  encoder = register_module("encoder", make_encoder(in, conv, hidden));
  lstm = register_module("lstm", torch::nn::LSTMCell(torch::nn::LSTMCellOptions(static_cast<std::int64_t>(features),
                                                                                static_cast<std::int64_t>(width))));
  torch::nn::init::orthogonal_(lstm->weight_ih, 1.0);
  torch::nn::init::orthogonal_(lstm->weight_hh, 1.0);
  torch::nn::init::zeros_(lstm->bias_ih);
  torch::nn::init::zeros_(lstm->bias_hh);
}

namespace {

// An LSTM's recurrence over T steps as one autograd node. Stepping
// torch::nn::LSTMCell makes about a dozen autograd nodes a step, forward and
// backward each a few microseconds of dispatch, and at a learner's sizes
// (rows of 8 to 64, widths of 64) that dispatch, not the arithmetic, was
// most of an update. Here a step is one product and three vectorised
// activations forward, one product backward; the elementwise rest is a loop
// over the state; the weights' gradient is one product over all the steps.
// The same function and gradients as the cell, to rounding.
//
// Inputs: gates_in [T, B, 4H], the input's part of each step's gates with
// both biases in; w_hh [4H, H]; h0, c0 [B, H]; keep [T, B], what a row's
// state is multiplied by before step t (0 where an episode starts, else 1).
// Outputs: h and c after each step, [T, B, H]. All float, contiguous.
// PyTorch's gate order: input, forget, cell, output.
struct lstm_recurrence : torch::autograd::Function<lstm_recurrence> {
  // `for_backward`: keep what backward() reads (false under
  // torch::NoGradGuard: each step's scratch is then reused).
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& gates_in,
                                                const torch::Tensor& w_hh, const torch::Tensor& h0,
                                                const torch::Tensor& c0, const torch::Tensor& keep,
                                                bool for_backward) {
    const auto T = gates_in.size(0), B = gates_in.size(1), H = w_hh.size(1);
    const auto kept = for_backward ? T : 1;
    const auto options = gates_in.options();
    auto acts = torch::empty({kept, B, 4 * H}, options);  // the gates after their activations
    auto h_in = torch::empty({kept, B, H}, options);      // the state each step starts from
    auto c_in = torch::empty({kept, B, H}, options);
    auto tanh_c = torch::empty({kept, B, H}, options);
    auto hs = torch::empty({T, B, H}, options);
    auto cs = torch::empty({T, B, H}, options);
    auto g = torch::empty({B, H}, options);
    const auto w_t = w_hh.t();
    const float* k = keep.data_ptr<float>();
    for (std::int64_t t = 0; t < T; ++t) {
      const auto slot = for_backward ? t : 0;
      const float* h_prev = (t == 0 ? h0 : hs[t - 1]).data_ptr<float>();
      const float* c_prev = (t == 0 ? c0 : cs[t - 1]).data_ptr<float>();
      float* hi = h_in[slot].data_ptr<float>();
      float* ci = c_in[slot].data_ptr<float>();
      for (std::int64_t b = 0; b < B; ++b) {
        const float kb = k[t * B + b];
        for (std::int64_t j = 0; j < H; ++j) {
          hi[b * H + j] = kb * h_prev[b * H + j];
          ci[b * H + j] = kb * c_prev[b * H + j];
        }
      }
      auto a = acts[slot];
      at::addmm_out(a, gates_in[t], h_in[slot], w_t);
      at::tanh_out(g, a.narrow(1, 2 * H, H));
      a.sigmoid_();
      float* ap = a.data_ptr<float>();
      const float* gp = g.data_ptr<float>();
      float* cp = cs[t].data_ptr<float>();
      for (std::int64_t b = 0; b < B; ++b) {
        float* row = ap + b * 4 * H;
        for (std::int64_t j = 0; j < H; ++j) {
          const float gj = gp[b * H + j];
          row[2 * H + j] = gj;
          cp[b * H + j] = row[H + j] * ci[b * H + j] + row[j] * gj;
        }
      }
      auto tanh_ct = tanh_c[slot];
      auto h_t = hs[t];
      at::tanh_out(tanh_ct, cs[t]);
      at::mul_out(h_t, a.narrow(1, 3 * H, H), tanh_ct);
    }
    if (for_backward) ctx->save_for_backward({w_hh, keep, acts, h_in, c_in, tanh_c});
    return {hs, cs};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& w_hh = saved[0];
    const auto& keep = saved[1];
    const auto& acts = saved[2];
    const auto& h_in = saved[3];
    const auto& c_in = saved[4];
    const auto& tanh_c = saved[5];
    const auto grad_hs = grads[0].contiguous(), grad_cs = grads[1].contiguous();
    const auto T = acts.size(0), B = acts.size(1), H = w_hh.size(1);
    auto d_gates = torch::empty({T, B, 4 * H}, acts.options());
    // The gradients of step t's h and c from the steps after it.
    auto dh = torch::zeros({B, H}, acts.options());
    auto dc = torch::zeros({B, H}, acts.options());
    float* dhp = dh.data_ptr<float>();
    float* dcp = dc.data_ptr<float>();
    const float* k = keep.data_ptr<float>();
    for (std::int64_t t = T - 1; t >= 0; --t) {
      const float* ap = acts[t].data_ptr<float>();
      const float* tc = tanh_c[t].data_ptr<float>();
      const float* ci = c_in[t].data_ptr<float>();
      const float* gh = grad_hs[t].data_ptr<float>();
      const float* gc = grad_cs[t].data_ptr<float>();
      float* dg = d_gates[t].data_ptr<float>();
      bool reset = false;
      for (std::int64_t b = 0; b < B; ++b) {
        const float kb = k[t * B + b];
        reset = reset || kb != 1.0f;
        const float* row = ap + b * 4 * H;
        float* drow = dg + b * 4 * H;
        for (std::int64_t j = 0; j < H; ++j) {
          const std::int64_t e = b * H + j;
          const float i = row[j], f = row[H + j], gg = row[2 * H + j], o = row[3 * H + j];
          const float dh_t = gh[e] + dhp[e];
          const float dc_t = gc[e] + dcp[e] + dh_t * o * (1.0f - tc[e] * tc[e]);
          drow[j] = dc_t * gg * i * (1.0f - i);
          drow[H + j] = dc_t * ci[e] * f * (1.0f - f);
          drow[2 * H + j] = dc_t * i * (1.0f - gg * gg);
          drow[3 * H + j] = dh_t * tc[e] * o * (1.0f - o);
          dcp[e] = dc_t * f * kb;
        }
      }
      at::mm_out(dh, d_gates[t], w_hh);
      if (reset) {
        for (std::int64_t b = 0; b < B; ++b) {
          const float kb = k[t * B + b];
          for (std::int64_t j = 0; j < H; ++j) dhp[b * H + j] *= kb;
        }
      }
    }
    auto grad_w_hh = torch::mm(d_gates.view({T * B, 4 * H}).t(), h_in.view({T * B, H}));
    return {d_gates, grad_w_hh, dh, dc, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

std::pair<torch::Tensor, torch::Tensor> recurrent_trunk_impl::unroll(const torch::Tensor& obs, const torch::Tensor& resets,
                                                                     torch::Tensor h, torch::Tensor c) {
  const auto B = obs.size(0);
  const auto T = obs.size(1);
  const auto H = lstm->weight_hh.size(1);
  // Time-major, so that each step's rows are one contiguous block.
  auto x = obs.transpose(0, 1).reshape({T * B, obs.size(2)});
  // The encoder on every step at once, and the input's part of every gate
  // (with both biases: a gate sees only their sum) as one product for all
  // steps; only h's part runs step by step, in lstm_recurrence.
  if (!encoder->is_empty()) x = encoder->forward(x);
  const auto gates_in = torch::addmm(lstm->bias_ih + lstm->bias_hh, x, lstm->weight_ih.t()).view({T, B, 4 * H});
  const auto keep = (1.0 - resets.to(torch::kFloat32)).transpose(0, 1).contiguous();  // [T, B]
  const auto out = lstm_recurrence::apply(gates_in, lstm->weight_hh, h.contiguous(), c.contiguous(), keep,
                                          torch::GradMode::is_enabled());
  return {out[0].transpose(0, 1).contiguous(), out[1].transpose(0, 1).contiguous()};
}

std::pair<torch::Tensor, torch::Tensor> recurrent_trunk_impl::step(const torch::Tensor& obs, const torch::Tensor& h,
                                                                   const torch::Tensor& c) {
  const auto x = encoder->is_empty() ? obs : encoder->forward(obs);
  auto [h2, c2] = lstm->forward(x, std::make_tuple(h, c));
  return {h2, c2};
}

actor_critic_impl::actor_critic_impl(const network_spec& s) : spec(s) {
  torch::NoGradGuard no_grad;
  const auto in = spec.input_dim();
  const auto heads = spec.logits_dim() + spec.continuous_dim();
  if (spec.lstm == 0 && !spec.conv.empty()) {
    encoder = register_module("encoder", make_encoder(in, spec.conv, spec.hidden));
    const std::size_t features = spec.hidden.empty() ? spec.conv.output_dim() : spec.hidden.back();
    actor = register_module("actor", make_mlp(features, {}, heads, 0.01));
    critic = register_module("critic", make_mlp(features, {}, 1, 1.0));
  } else if (spec.lstm == 0) {
    actor = register_module("actor", make_mlp(in, spec.hidden, heads, 0.01));
    critic = register_module("critic", make_mlp(in, spec.hidden, 1, 1.0));
  } else {
    trunk = register_module("trunk", recurrent_trunk(in, spec.hidden, spec.lstm, spec.conv));
    actor = register_module("actor", make_mlp(spec.lstm, {}, heads, 0.01));
    critic = register_module("critic", make_mlp(spec.lstm, {}, 1, 1.0));
  }
  if (spec.continuous_dim() > 0) {
    log_std = register_parameter("log_std", torch::zeros({static_cast<std::int64_t>(spec.continuous_dim())}));
  }
}

std::pair<torch::Tensor, torch::Tensor> actor_critic_impl::log_prob_entropy(const torch::Tensor& out,
                                                                            const torch::Tensor& discrete,
                                                                            const torch::Tensor& continuous,
                                                                            const torch::Tensor& masks) const {
  const auto B = out.size(0);
  auto logp = torch::zeros({B}, out.options());
  auto entropy = torch::zeros({B}, out.options());
  std::int64_t offset = 0;
  for (std::size_t h = 0; h < spec.nvec.size(); ++h) {
    const std::int64_t n = spec.nvec[h];
    auto logits = out.narrow(1, offset, n);
    torch::Tensor illegal;
    if (masks.defined()) {
      illegal = masks.narrow(1, offset, n).logical_not();
      logits = logits.masked_fill(illegal, -std::numeric_limits<float>::infinity());
    }
    auto lp = torch::log_softmax(logits, 1);
    logp = logp + lp.gather(1, discrete.narrow(1, static_cast<std::int64_t>(h), 1)).squeeze(1);
    // A masked value's term is 0 (not 0 × −∞): filled before the product,
    // so that no NaN reaches the gradient either.
    const auto lp_terms = masks.defined() ? lp.masked_fill(illegal, 0.0) : lp;
    entropy = entropy - (lp.exp() * lp_terms).sum(1);
    offset += n;
  }
  if (spec.continuous_dim() > 0) {
    const auto c = static_cast<std::int64_t>(spec.continuous_dim());
    auto mean = out.narrow(1, offset, c);
    auto z = (continuous - mean) * torch::exp(-log_std);
    constexpr double half_log_2pi = 0.91893853320467274178;
    logp = logp + (-0.5 * z * z - log_std - half_log_2pi).sum(1);
    entropy = entropy + (0.5 + half_log_2pi + log_std).sum();
  }
  return {logp, entropy};
}

std::vector<torch::Tensor> actor_critic_impl::ordered() const {
  return parameters(/*recurse=*/true);  // the module's own first (log_std), then actor's and critic's
}

std::vector<float> flatten(const std::vector<torch::Tensor>& params) {
  std::vector<float> out;
  for (const auto& p : params) {
    auto c = p.detach().contiguous();
    out.insert(out.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
  return out;
}

void load(const std::vector<torch::Tensor>& params, std::span<const float> weights, std::string_view owner) {
  torch::NoGradGuard no_grad;
  std::size_t total = 0;
  for (const auto& p : params) total += static_cast<std::size_t>(p.numel());
  if (total != weights.size()) {
    throw usage_error(fmt::format("{}: {} weights given, the network has {}", owner, weights.size(), total));
  }
  std::size_t offset = 0;
  for (auto p : params) {
    const auto n = static_cast<std::size_t>(p.numel());
    std::copy_n(weights.begin() + static_cast<std::ptrdiff_t>(offset), n, p.data_ptr<float>());
    offset += n;
  }
}

std::vector<float> flatten(const actor_critic_impl& net) { return flatten(net.ordered()); }

void load(actor_critic_impl& net, std::span<const float> weights) { load(net.ordered(), weights, "actor_critic"); }

}  // namespace detail

}  // namespace coral::learners
