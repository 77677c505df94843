// The recurrent actor-critic on the fused engine
// (coral/learners/fused/recurrent_actor_critic.hpp).

#include "coral/learners/fused/recurrent_actor_critic.hpp"

#include <algorithm>
#include <string>


#include "coral/core/error.hpp"
#include "coral/core/rng.hpp"
#include "coral/learners/errors.hpp"

namespace coral::learners::fused {
namespace {

/// The heads' network: an actor-critic without hidden layers over the LSTM's output.
network_spec heads_of(const network_spec& spec) {
  network_spec heads = spec;
  heads.raw_obs_dim = spec.lstm;
  heads.frames = 1;
  heads.hidden.clear();
  heads.conv = {};
  heads.normalize_observations = false;
  heads.lstm = 0;
  return heads;
}

/// A network spec with an LSTM, or usage_error.
const network_spec& recurrent_only(const network_spec& spec) {
  if (spec.lstm == 0) throw usage_error(std::string(errors::fused_needs_lstm));
  return spec;
}

std::size_t trunk_floats(const network_spec& spec) {
  return lstm_trunk(spec.input_dim(), spec.hidden, spec.lstm, 0, 0, 0, spec.conv).parameter_count();
}

}  // namespace

std::size_t recurrent_actor_critic::parameter_count(const network_spec& spec) {
  return trunk_floats(recurrent_only(spec)) + actor_critic::parameter_count(heads_of(spec));
}

recurrent_actor_critic::recurrent_actor_critic(const network_spec& spec, std::size_t max_rows, std::size_t max_steps)
    : spec_(recurrent_only(spec)),
      continuous_(spec.continuous_dim()),
      trunk_end_(continuous_ + trunk_floats(spec)),
      trunk_(spec.input_dim(), spec.hidden, spec.lstm, continuous_, 0, 0, spec.conv),
      heads_(heads_of(spec), 0) {
  params_.resize(parameter_count(spec));
  grads_.resize(params_.size());
  reserve(max_rows, max_steps);
}

void recurrent_actor_critic::reserve(std::size_t rows, std::size_t steps) {
  if (rows <= max_rows_ && steps <= max_steps_) return;
  max_rows_ = std::max(rows, max_rows_);
  max_steps_ = std::max(steps, max_steps_);
  const std::size_t n = max_rows_ * max_steps_, H = spec_.lstm;
  trunk_ = lstm_trunk(spec_.input_dim(), spec_.hidden, H, continuous_, max_rows_, max_steps_, spec_.conv);
  heads_ = actor_critic(heads_of(spec_), n);
  hs_.resize(n * H);
  cs_.resize(n * H);
  d_features_.resize(n * H);
  rows_ = steps_ = 0;
}

void recurrent_actor_critic::forward(const float* x, const float* keep, const float* h0, const float* c0,
                                     std::size_t rows, std::size_t steps, bool for_backward) {
  trunk_.forward(params_.data(), x, keep, h0, c0, rows, steps, hs_.data(), cs_.data(), for_backward);
  rows_ = rows;
  steps_ = steps;
  // The heads' parameters: log_std, then the actor's and critic's layers.
  auto heads = heads_.parameters();
  std::copy_n(params_.begin(), continuous_, heads.begin());
  std::copy(params_.begin() + static_cast<std::ptrdiff_t>(trunk_end_), params_.end(),
            heads.begin() + static_cast<std::ptrdiff_t>(continuous_));
  heads_.forward(hs_.data(), rows * steps);
}

std::span<const float> recurrent_actor_critic::features() const noexcept {
  return {hs_.data(), rows_ * steps_ * spec_.lstm};
}

std::span<const float> recurrent_actor_critic::cells() const noexcept {
  return {cs_.data(), rows_ * steps_ * spec_.lstm};
}

void recurrent_actor_critic::backward(const float* d_log_prob, const float* d_entropy,
                                      const float* d_value) noexcept {
  heads_.backward(d_log_prob, d_entropy, d_value, d_features_.data());
  backward_from_features();
}

void recurrent_actor_critic::backward_from_features() noexcept {
  trunk_.backward(params_.data(), grads_.data(), d_features_.data(), nullptr);
  const auto heads = heads_.gradients();
  std::copy_n(heads.begin(), continuous_, grads_.begin());
  std::copy(heads.begin() + static_cast<std::ptrdiff_t>(continuous_), heads.end(),
            grads_.begin() + static_cast<std::ptrdiff_t>(trunk_end_));
}

std::vector<float> init_recurrent_actor_critic(const network_spec& spec, std::uint64_t seed) {
  const std::size_t C = recurrent_only(spec).continuous_dim(), H = spec.lstm;
  std::size_t heads = C;  // the actor head's outputs: the logits, then the means
  for (const auto n : spec.nvec) heads += static_cast<std::size_t>(n);
  std::vector<float> flat(recurrent_actor_critic::parameter_count(spec), 0.0f);
  std::uint64_t stream = 0;
  init_lstm_trunk(flat.data(), C, spec.input_dim(), spec.hidden, H, seed, stream, spec.conv);
  // The actor head [heads][H] and its bias, then the critic head [1][H].
  const std::size_t actor = C + trunk_floats(spec), critic = actor + heads * H + heads;
  orthogonal(flat.data() + actor, heads, H, 0.01, coral::rng(coral::env_seed{seed, stream++})());
  orthogonal(flat.data() + critic, 1, H, 1.0, coral::rng(coral::env_seed{seed, stream++})());
  return flat;
}

}  // namespace coral::learners::fused
