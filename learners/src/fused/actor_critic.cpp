// The MLP actor-critic on the fused engine (coral/learners/fused/actor_critic.hpp).

#include "coral/learners/fused/actor_critic.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/core/interrupts.hpp"
#include "coral/core/rng.hpp"
#include "coral/learners/errors.hpp"
#include "coral/learners/fused/conv.hpp"

namespace coral::learners::fused {
namespace {

constexpr float half_log_2pi = 0.91893853320467274178f;

std::size_t sum_of(const std::vector<std::int32_t>& nvec) noexcept {
  std::size_t n = 0;
  for (auto v : nvec) n += static_cast<std::size_t>(v);
  return n;
}

// With convolutions the actor and critic share an encoder (the
// convolutions and the hidden layers, ReLU) and are one linear head each;
// without, they are MLPs of their own (tanh).
bool shares_encoder(const network_spec& spec) noexcept { return !spec.conv.empty(); }

// The shared encoder, its parameters after log_std's (none without convolutions).
encoder encoder_of(const network_spec& spec, std::size_t max_rows) {
  if (!shares_encoder(spec)) return {};
  return {spec.input_dim(), spec.conv, spec.hidden, activation::relu, spec.continuous_dim(), max_rows};
}

// The actor's MLP, its parameters after log_std's and the encoder's.
mlp actor_of(const network_spec& spec, const encoder& shared, std::size_t max_rows) {
  const std::size_t heads = sum_of(spec.nvec) + spec.continuous_dim();
  if (shares_encoder(spec)) {
    return make_mlp(shared.output_dim(), {}, heads, spec.continuous_dim() + shared.parameter_count(), max_rows);
  }
  return make_mlp(spec.input_dim(), spec.hidden, heads, spec.continuous_dim(), max_rows);
}

// The critic's MLP, its parameters after the actor's.
mlp critic_of(const network_spec& spec, const encoder& shared, const mlp& actor, std::size_t max_rows) {
  const std::size_t offset = actor.layers.front().offset + fused::parameter_count(actor);
  if (shares_encoder(spec)) return make_mlp(shared.output_dim(), {}, 1, offset, max_rows);
  return make_mlp(spec.input_dim(), spec.hidden, 1, offset, max_rows);
}

}  // namespace

std::size_t actor_critic::parameter_count(const network_spec& spec) {
  const auto shared = encoder_of(spec, 0);
  const auto actor = actor_of(spec, shared, 0);
  const auto critic = critic_of(spec, shared, actor, 0);
  return spec.continuous_dim() + shared.parameter_count() + fused::parameter_count(actor) +
         fused::parameter_count(critic);
}

actor_critic::actor_critic(const network_spec& spec, std::size_t max_rows)
    : spec_(spec), max_rows_(max_rows), logits_(sum_of(spec.nvec)), continuous_(spec.continuous_dim()) {
  if (spec.lstm != 0) throw usage_error(fmt::format(fmt::runtime(errors::fused_needs_mlp), spec.lstm));
  encoder_ = encoder_of(spec, max_rows);
  actor_ = actor_of(spec, encoder_, max_rows);
  critic_ = critic_of(spec, encoder_, actor_, max_rows);
  params_.resize(parameter_count(spec));
  if (shares_encoder(spec)) {
    d_features_.resize(max_rows * encoder_.output_dim());
    d_critic_features_.resize(max_rows * encoder_.output_dim());
  }
  grads_.resize(params_.size());
  log_softmax_.resize(max_rows * logits_);
  head_entropy_.resize(max_rows * spec.nvec.size());
  z_.resize(max_rows * continuous_);
  inv_std_.resize(continuous_);
  d_log_std_.resize(continuous_);
  log_prob_.resize(max_rows);
  entropy_.resize(max_rows);
  d_out_.resize(max_rows * head_width());
  d_x_critic_.resize(max_rows * spec.input_dim());
}

void actor_critic::forward(const float* x, std::size_t rows) {
  if (rows > max_rows_) throw usage_error(fmt::format(fmt::runtime(errors::fused_too_many_rows), rows, max_rows_));
  rows_ = rows;
  x_ = shares_encoder(spec_) ? encoder_.forward(params_.data(), x, rows) : x;
  fused::forward(actor_, params_.data(), x_, rows);
  fused::forward(critic_, params_.data(), x_, rows);
}

std::span<const float> actor_critic::actor_out() const noexcept {
  return {actor_.outputs.back().data(), rows_ * head_width()};
}

std::span<const float> actor_critic::values() const noexcept { return {critic_.outputs.back().data(), rows_}; }

std::span<const float> actor_critic::log_probs() const noexcept { return {log_prob_.data(), rows_}; }

std::span<const float> actor_critic::entropies() const noexcept { return {entropy_.data(), rows_}; }

void actor_critic::log_prob_entropy(const std::int32_t* discrete, const float* continuous,
                                    const std::uint8_t* masks) noexcept {
  discrete_ = discrete;
  continuous_actions_ = continuous;
  masks_ = masks;
  constexpr float minus_infinity = -std::numeric_limits<float>::infinity();
  const std::size_t width = head_width(), heads = spec_.nvec.size();
  const float* out = actor_.outputs.back().data();
  const float* log_std = params_.data();
  // The Gaussians' entropy is the same for every row.
  float gauss_entropy = 0.0f;
  for (std::size_t k = 0; k < continuous_; ++k) {
    inv_std_[k] = std::exp(-log_std[k]);
    gauss_entropy += 0.5f + half_log_2pi + log_std[k];
  }
  for (std::size_t r = 0; r < rows_; ++r) {
    const float* row = out + r * width;
    float* lsm = log_softmax_.data() + r * logits_;
    const std::uint8_t* legal_row = masks == nullptr ? nullptr : masks + r * logits_;
    float logp = 0.0f, entropy = 0.0f;
    std::size_t offset = 0;
    for (std::size_t h = 0; h < heads; ++h) {
      const auto n = static_cast<std::size_t>(spec_.nvec[h]);
      const float* z = row + offset;
      float* lp = lsm + offset;
      const std::uint8_t* legal = legal_row == nullptr ? nullptr : legal_row + offset;
      const auto allowed = [legal](std::size_t j) { return legal == nullptr || legal[j] != 0; };
      float top = minus_infinity;
      for (std::size_t j = 0; j < n; ++j) {
        if (allowed(j)) top = std::max(top, z[j]);
      }
      float sum = 0.0f;
      for (std::size_t j = 0; j < n; ++j) {
        if (allowed(j)) sum += std::exp(z[j] - top);
      }
      const float log_sum = std::log(sum);
      float head_entropy = 0.0f;
      for (std::size_t j = 0; j < n; ++j) {
        if (!allowed(j)) {
          lp[j] = minus_infinity;  // probability 0, no share of the entropy
          continue;
        }
        lp[j] = (z[j] - top) - log_sum;
        head_entropy -= std::exp(lp[j]) * lp[j];
      }
      head_entropy_[r * heads + h] = head_entropy;
      logp += lp[static_cast<std::size_t>(discrete[r * heads + h])];
      entropy += head_entropy;
      offset += n;
    }
    if (continuous_ > 0) {
      const float* mean = row + logits_;
      const float* a = continuous + r * continuous_;
      float* zr = z_.data() + r * continuous_;
      float gauss = 0.0f;
      for (std::size_t k = 0; k < continuous_; ++k) {
        zr[k] = (a[k] - mean[k]) * inv_std_[k];
        gauss += -0.5f * zr[k] * zr[k] - log_std[k] - half_log_2pi;
      }
      logp += gauss;
      entropy += gauss_entropy;
    }
    log_prob_[r] = logp;
    entropy_[r] = entropy;
  }
}

void actor_critic::backward(const float* d_log_prob, const float* d_entropy, const float* d_value,
                            float* d_x) noexcept {
  const std::size_t width = head_width(), heads = spec_.nvec.size();
  // The log std's gradient sums a term of every row, which nearly cancel
  // (the entropy's pulls one way, the log probabilities' the other):
  // summed in double, rounded once.
  double* d_log_std = d_log_std_.data();
  std::fill_n(d_log_std, continuous_, 0.0);
  for (std::size_t r = 0; r < rows_; ++r) {
    const float gl = d_log_prob[r], ge = d_entropy[r];
    const float* lsm = log_softmax_.data() + r * logits_;
    const std::uint8_t* legal = masks_ == nullptr ? nullptr : masks_ + r * logits_;
    float* d = d_out_.data() + r * width;
    std::size_t offset = 0;
    // A categorical head: d log p(a) / d z_j = [j = a] − p_j, and
    // d entropy / d z_j = −p_j (log p_j + entropy); a masked logit (−∞, a
    // constant) gets none.
    for (std::size_t h = 0; h < heads; ++h) {
      const auto n = static_cast<std::size_t>(spec_.nvec[h]);
      const auto a = static_cast<std::size_t>(discrete_[r * heads + h]);
      const float head_entropy = head_entropy_[r * heads + h];
      for (std::size_t j = 0; j < n; ++j) {
        if (legal != nullptr && legal[offset + j] == 0) {
          d[offset + j] = 0.0f;
          continue;
        }
        const float lp = lsm[offset + j];
        const float p = std::exp(lp);
        d[offset + j] = gl * ((j == a ? 1.0f : 0.0f) - p) - ge * p * (lp + head_entropy);
      }
      offset += n;
    }
    // A Gaussian: d log p / d mean = z / std, d log p / d log_std = z² − 1,
    // d entropy / d log_std = 1.
    const float* z = z_.data() + r * continuous_;
    for (std::size_t k = 0; k < continuous_; ++k) {
      d[logits_ + k] = gl * z[k] * inv_std_[k];
      d_log_std[k] += static_cast<double>(gl) * (static_cast<double>(z[k]) * z[k] - 1.0) + ge;
    }
  }
  for (std::size_t k = 0; k < continuous_; ++k) grads_[k] = static_cast<float>(d_log_std[k]);
  if (shares_encoder(spec_)) {
    // Both heads' gradients of the shared features, summed, go into the
    // encoder (which reads observations: no d_x).
    float* d_features = d_features_.data();
    const float* d_critic = d_critic_features_.data();
    fused::backward(actor_, params_.data(), grads_.data(), x_, d_out_.data(), rows_, d_features);
    fused::backward(critic_, params_.data(), grads_.data(), x_, d_value, rows_, d_critic_features_.data());
    for (std::size_t i = 0; i < rows_ * encoder_.output_dim(); ++i) d_features[i] += d_critic[i];
    encoder_.backward(params_.data(), grads_.data(), d_features, rows_);
    return;
  }
  fused::backward(actor_, params_.data(), grads_.data(), x_, d_out_.data(), rows_, d_x);
  fused::backward(critic_, params_.data(), grads_.data(), x_, d_value, rows_,
                  d_x != nullptr ? d_x_critic_.data() : nullptr);
  if (d_x != nullptr) {
    for (std::size_t i = 0; i < rows_ * spec_.input_dim(); ++i) d_x[i] += d_x_critic_[i];
  }
}

void orthogonal(float* w, std::size_t rows, std::size_t cols, double gain, std::uint64_t seed) {
  // A tall matrix [n][k] (n ≥ k) of normal draws whose k columns are made
  // orthonormal; w is it, or its transpose where rows < cols. The columns are
  // kept contiguous (q[c * n + i]) so that each pass reads memory in order.
  const bool wide = rows < cols;
  const std::size_t n = wide ? cols : rows, k = wide ? rows : cols;
  coral::rng gen(seed);
  std::vector<double> q(n * k);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < k; ++c) q[c * n + i] = gen.normal();  // drawn row by row
  }
  for (std::size_t c = 0; c < k; ++c) {
    // O(n k^2) in all: a network of tens of millions of weights takes
    // minutes, so a stop signal ends it here rather than after.
    if (interrupted()) throw error(fmt::format(fmt::runtime(errors::init_interrupted), rows, cols));
    double* qc = q.data() + c * n;
    // Modified Gram-Schmidt, twice for accuracy in float after rounding.
    for (int pass = 0; pass < 2; ++pass) {
      for (std::size_t p = 0; p < c; ++p) {
        const double* qp = q.data() + p * n;
        double dot = 0;
        for (std::size_t i = 0; i < n; ++i) dot += qp[i] * qc[i];
        for (std::size_t i = 0; i < n; ++i) qc[i] -= dot * qp[i];
      }
    }
    double norm = 0;
    for (std::size_t i = 0; i < n; ++i) norm += qc[i] * qc[i];
    norm = std::sqrt(norm);
    for (std::size_t i = 0; i < n; ++i) qc[i] /= norm;
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < k; ++j) {
      const auto v = static_cast<float>(gain * q[j * n + i]);
      if (wide) {
        w[j * cols + i] = v;
      } else {
        w[i * cols + j] = v;
      }
    }
  }
}

std::vector<float> init_orthogonal(const network_spec& spec, std::uint64_t seed) {
  if (spec.lstm != 0) throw usage_error(fmt::format(fmt::runtime(errors::fused_needs_mlp), spec.lstm));
  std::vector<float> flat(actor_critic::parameter_count(spec), 0.0f);
  const auto shared = encoder_of(spec, 0);
  const auto actor = actor_of(spec, shared, 0);
  const auto critic = critic_of(spec, shared, actor, 0);
  // Each matrix from a stream of its own: (seed, its index).
  std::uint64_t stream = 0;
  const double hidden_gain = std::sqrt(2.0);
  auto fill = [&](const mlp& net, double head_gain) {
    for (std::size_t l = 0; l < net.layers.size(); ++l) {
      const auto& layer = net.layers[l];
      const double gain = l + 1 < net.layers.size() ? hidden_gain : head_gain;
      const std::uint64_t s = coral::rng(coral::env_seed{seed, stream++})();
      orthogonal(flat.data() + layer.offset, layer.out, layer.in, gain, s);
    }
  };
  for (const auto& layer : shared.convolutions().layers()) {
    const std::uint64_t s = coral::rng(coral::env_seed{seed, stream++})();
    orthogonal(flat.data() + layer.offset, layer.out_c, layer.patch(), hidden_gain, s);
  }
  fill(shared.dense(), hidden_gain);
  fill(actor, 0.01);
  fill(critic, 1.0);
  return flat;
}

}  // namespace coral::learners::fused
