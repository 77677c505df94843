// PPO's updates on the fused engine (torch-free): the same update as the
// torch twin's (ppo_torch.cpp) step for step — the same GAE, the same
// minibatch order from the same generator, the same loss, clipping and
// Adam arithmetic (coral/learners/fused/) — over buffers allocated once.
// Its state is the twin's: checkpoints move between the backends.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "coral/core/error.hpp"
#include "coral/learners/blas_core.hpp"
#include "coral/learners/fused/actor_critic.hpp"
#include "coral/learners/fused/optim.hpp"
#include "coral/learners/fused/ppo.hpp"
#include "coral/training/reward_scaler.hpp"
#include "coral/training/running_moments.hpp"
#include "learner_backends.hpp"
#include "ppo_shared.hpp"

namespace coral::learners {
namespace {

class fused_ppo final : public ppo_learner::backend {
 public:
  fused_ppo(const network_spec& spec, const ppo_config& config, std::uint64_t seed, std::uint64_t total_steps)
      : spec_(spec),
        config_(config),
        total_steps_(total_steps),
        rng_(seed ^ 0x5EEDULL),
        net_(spec, std::max<std::size_t>(config.minibatch_size, 1)),
        adam_(fused::actor_critic::parameter_count(spec), config.adam_epsilon),
        work_(std::max<std::size_t>(config.minibatch_size, 1)),
        moments_(spec.normalize_observations ? spec.input_dim() : 0) {
    report_blas_setup();
    const auto init = fused::init_orthogonal(spec, seed);
    std::copy(init.begin(), init.end(), net_.parameters().begin());
    if (spec.normalize_observations) block_ = training::normalizer_block(moments_);
    if (config.scale_rewards) scaler_.emplace(config.gamma);
  }

  training::update_stats update(const training::rollout_segment& seg, std::uint64_t version,
                                training::learner_activity* activity) override;

  std::vector<float> weights() const override {
    std::vector<float> w(net_.parameters().begin(), net_.parameters().end());
    w.insert(w.end(), block_.begin(), block_.end());
    return w;
  }

  std::vector<float> values(std::span<const float> observations) const override {
    std::vector<float> storage;
    const auto inputs = detail::network_inputs(spec_, observations, storage);
    auto in = normalized(inputs);
    return critic(in, inputs.size() / spec_.input_dim());
  }

  training::learner_state state() const override {
    training::learner_state st;
    st.parameters.assign(net_.parameters().begin(), net_.parameters().end());
    st.adam_m = adam_.m;
    st.adam_v = adam_.v;
    st.adam_steps = adam_.steps;
    st.updates = updates_;
    st.env_steps = env_steps_;
    st.rng = rng_;
    if (!block_.empty()) st.observation_moments = moments_.save();
    if (scaler_) st.reward_scaling = scaler_->save();
    return st;
  }

  void restore(const training::learner_state& st) override {
    detail::check_ppo_state(st, !block_.empty(), scaler_.has_value());
    const auto n = net_.parameters().size();
    if (st.parameters.size() != n || st.adam_m.size() != n || st.adam_v.size() != n) {
      throw usage_error(fmt::format("ppo_learner: {} parameters and {}/{} Adam moments given, the network has {}",
                                    st.parameters.size(), st.adam_m.size(), st.adam_v.size(), n));
    }
    std::copy(st.parameters.begin(), st.parameters.end(), net_.parameters().begin());
    adam_.m = st.adam_m;
    adam_.v = st.adam_v;
    adam_.steps = st.adam_steps;
    if (!block_.empty()) {
      moments_.load(st.observation_moments);
      block_ = training::normalizer_block(moments_);
    }
    if (scaler_) scaler_->load(st.reward_scaling);
    updates_ = st.updates;
    env_steps_ = st.env_steps;
    rng_ = st.rng;
  }

  std::uint64_t updates() const noexcept override { return updates_; }
  std::uint64_t env_steps() const noexcept override { return env_steps_; }
  const network_spec& spec() const noexcept override { return spec_; }

 private:
  /// `in` (rows of input_dim) normalised with the published block, or a copy.
  std::vector<float> normalized(std::span<const float> in) const {
    std::vector<float> out(in.begin(), in.end());
    if (block_.empty()) return out;
    const auto D = spec_.input_dim();
    for (std::size_t r = 0; r * D < in.size(); ++r) training::normalize_observation(block_, in.data() + r * D, out.data() + r * D);
    return out;
  }

  /// The critic's values of `rows` normalised rows, in passes of at most
  /// max_rows() (a forward pass outside a minibatch step changes nothing
  /// the next step reads).
  std::vector<float> critic(std::span<const float> in, std::size_t rows) const {
    std::vector<float> out(rows);
    const auto D = spec_.input_dim();
    for (std::size_t at = 0; at < rows; at += net_.max_rows()) {
      const auto n = std::min(net_.max_rows(), rows - at);
      net_.forward(in.data() + at * D, n);
      std::copy_n(net_.values().begin(), n, out.begin() + static_cast<std::ptrdiff_t>(at));
    }
    return out;
  }

  network_spec spec_;
  ppo_config config_;
  std::uint64_t total_steps_;
  std::uint64_t rng_;
  mutable fused::actor_critic net_;  // mutable: critic() runs forward passes
  fused::adam adam_;
  fused::ppo_workspace work_;
  training::running_moments moments_;
  std::vector<float> block_;  // normalizer_block(moments_), as published; empty without obs norm
  std::optional<training::reward_scaler> scaler_;
  std::uint64_t updates_ = 0;
  std::uint64_t env_steps_ = 0;
  // A minibatch's rows, gathered.
  std::vector<float> mb_obs_, mb_cont_, mb_logp_, mb_val_, mb_adv_, mb_ret_;
  std::vector<std::int32_t> mb_disc_;
  std::vector<std::uint8_t> mb_mask_;
};

training::update_stats fused_ppo::update(const training::rollout_segment& seg, std::uint64_t version,
                                         training::learner_activity* activity) {
  const auto& c = config_;
  const auto R = seg.rows, T = seg.horizon, N = R * T, D = spec_.input_dim();
  const auto started = std::chrono::steady_clock::now();
  training::update_stats out;
  detail::policy_lag(seg, version, out);
  if (seg.state_dim != 0) {
    throw usage_error(fmt::format("ppo_learner: the segment carries {} floats of state per row, the network {}",
                                  seg.state_dim, spec_.state_dim()));
  }
  // Normalised with the moments the acting policy had (the block published
  // with the weights it acted with, when the lag is 0).
  // The network's inputs (one-hot elements expanded), normalised.
  std::vector<float> encoded;
  const auto inputs = detail::network_inputs(spec_, seg.observations, encoded);
  const auto all_obs = normalized(inputs);  // [R][T + 1][D]
  std::vector<float> last(R * D);
  for (std::size_t r = 0; r < R; ++r) {
    std::copy_n(all_obs.begin() + static_cast<std::ptrdiff_t>((r * (T + 1) + T) * D), D,
                last.begin() + static_cast<std::ptrdiff_t>(r * D));
  }
  const auto bootstrap = critic(last, R);
  std::vector<float> rewards = seg.rewards;
  if (scaler_) scaler_->scale(rewards, seg.terminated, seg.truncated, seg.rows, seg.horizon);
  if (!seg.truncated_steps.empty()) {
    std::vector<float> encoded_final;
    const auto final_values =
        critic(normalized(detail::network_inputs(spec_, seg.truncated_observations, encoded_final)),
               seg.truncated_steps.size());
    for (std::size_t j = 0; j < seg.truncated_steps.size(); ++j) {
      rewards[seg.truncated_steps[j]] += static_cast<float>(c.gamma) * final_values[j];
    }
  }
  std::vector<float> advantages(N), returns(N);
  detail::gae(seg, rewards, bootstrap, c.gamma, c.gae_lambda, advantages, returns);

  const double lr = detail::annealed_rate(c, env_steps_, total_steps_);
  out.learning_rate = lr;

  // The acted steps (all of a single-agent segment's) are the samples; too
  // few for a minibatch (an advantage's std needs 2) train nothing.
  const auto samples = detail::acted_steps(seg);
  const auto S = samples.size() < 2 ? 0 : samples.size();
  const auto mb = std::min(std::max<std::size_t>(c.minibatch_size, 1), std::max<std::size_t>(S, 1));
  const auto nd = seg.discrete_dim, nc = seg.continuous_dim;
  mb_obs_.resize(mb * D);
  mb_disc_.resize(mb * nd);
  mb_cont_.resize(mb * nc);
  mb_logp_.resize(mb);
  mb_val_.resize(mb);
  mb_adv_.resize(mb);
  mb_ret_.resize(mb);
  // The masks the actions were drawn under, where the env masks.
  const std::size_t md = c.action_masks ? seg.mask_dim : 0;
  if (md != 0 && md != spec_.logits_dim()) {
    throw usage_error(fmt::format("ppo_learner: masks of {} bytes per step, the network has {} logits", md,
                                  spec_.logits_dim()));
  }
  mb_mask_.resize(mb * md);
  std::vector<std::size_t> order(S);
  const auto batches_per_epoch = static_cast<std::uint64_t>(S / mb);
  if (activity != nullptr) activity->begin(updates_ + 1, c.epochs * batches_per_epoch);
  bool stopping = false;  // a stop ends the update at a minibatch boundary (learner_activity)
  for (std::size_t epoch = 0; epoch < c.epochs && !stopping; ++epoch) {
    detail::shuffle(order, rng_);
    const bool last_epoch = epoch + 1 == c.epochs;
    double kl_sum = 0, clip_sum = 0, pl_sum = 0, vl_sum = 0, ent_sum = 0;
    std::size_t batches = 0;
    for (std::size_t start = 0; start + mb <= S; start += mb) {
      for (std::size_t j = 0; j < mb; ++j) {
        const auto i = samples[order[start + j]];
        const auto row = (i / T) * (T + 1) + i % T;  // step i's observation in all_obs
        std::copy_n(all_obs.begin() + static_cast<std::ptrdiff_t>(row * D), D, mb_obs_.begin() + static_cast<std::ptrdiff_t>(j * D));
        std::copy_n(seg.discrete_actions.begin() + static_cast<std::ptrdiff_t>(i * nd), nd,
                    mb_disc_.begin() + static_cast<std::ptrdiff_t>(j * nd));
        std::copy_n(seg.continuous_actions.begin() + static_cast<std::ptrdiff_t>(i * nc), nc,
                    mb_cont_.begin() + static_cast<std::ptrdiff_t>(j * nc));
        std::copy_n(seg.action_masks.begin() + static_cast<std::ptrdiff_t>(i * md), md,
                    mb_mask_.begin() + static_cast<std::ptrdiff_t>(j * md));
        mb_logp_[j] = seg.log_probs[i];
        mb_val_[j] = seg.values[i];
        mb_adv_[j] = advantages[i];
        mb_ret_[j] = returns[i];
      }
      const fused::ppo_minibatch batch{.rows = mb,
                                       .observations = mb_obs_,
                                       .discrete_actions = mb_disc_,
                                       .continuous_actions = mb_cont_,
                                       .log_probs = mb_logp_,
                                       .values = mb_val_,
                                       .advantages = mb_adv_,
                                       .returns = mb_ret_,
                                       .action_masks = mb_mask_};
      const auto st = fused::ppo_step(net_, adam_, work_, batch, c, lr);
      if (activity != nullptr && !activity->step()) {
        stopping = true;
        break;
      }
      if (last_epoch) {
        kl_sum += st.approx_kl;
        clip_sum += st.clip_fraction;
        pl_sum += st.policy_loss;
        vl_sum += st.value_loss;
        ent_sum += st.entropy;
        ++batches;
      }
    }
    if (last_epoch && batches > 0) {
      const auto b = static_cast<double>(batches);
      out.approx_kl = kl_sum / b;
      out.clip_fraction = clip_sum / b;
      out.policy_loss = pl_sum / b;
      out.value_loss = vl_sum / b;
      out.entropy = ent_sum / b;
    }
  }
  if (activity != nullptr) activity->end();
  if (!block_.empty()) {
    // The observations acted on, the bootstrap ones left out (each is the
    // next segment's first).
    detail::for_each_acted_run(seg, [&](std::size_t first, std::size_t count) {
      moments_.update(inputs.subspan(first * D, count * D));
    });
    block_ = training::normalizer_block(moments_);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ++updates_;
  env_steps_ += seg.env_steps();
  return out;
}

}  // namespace

namespace detail {

bool fused_ppo_supports(const network_spec& spec) noexcept { return spec.lstm == 0; }

std::unique_ptr<ppo_learner::backend> make_fused_ppo(const network_spec& spec, const ppo_config& config,
                                                     std::uint64_t seed, std::uint64_t total_steps) {
  return std::make_unique<fused_ppo>(spec, config, seed, total_steps);
}

}  // namespace detail

}  // namespace coral::learners
