// PPO's updates on the fused engine (torch-free): the same update as the
// torch twin's (ppo_torch.cpp) step for step — the same GAE, the same
// minibatch order from the same generator, the same loss, clipping and
// Adam arithmetic (coral/learners/fused/) — over buffers allocated once
// (the recurrent network's at the first update, when the segments' shape
// is known). Its state is the twin's: checkpoints move between the backends.

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
#include "coral/learners/fused/recurrent_actor_critic.hpp"
#include "coral/learners/fused/recurrent_ppo.hpp"
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
        adam_(spec.lstm > 0 ? fused::recurrent_actor_critic::parameter_count(spec)
                            : fused::actor_critic::parameter_count(spec),
              config.adam_epsilon),
        work_(std::max<std::size_t>(config.minibatch_size, 1)),
        moments_(spec.normalize_observations ? spec.input_dim() : 0) {
    report_blas_setup();
    if (spec.lstm > 0) {
      recurrent_.emplace(spec, 1, 1);  // reserved for the segments' shape at the first update
    } else {
      net_.emplace(spec, std::max<std::size_t>(config.minibatch_size, 1));
    }
    const auto init = spec.lstm > 0 ? fused::init_recurrent_actor_critic(spec, seed) : fused::init_orthogonal(spec, seed);
    std::copy(init.begin(), init.end(), parameters().begin());
    if (spec.normalize_observations) block_ = training::normalizer_block(moments_);
    if (config.scale_rewards) scaler_.emplace(config.gamma);
  }

  training::update_stats update(const training::rollout_segment& seg, std::uint64_t version,
                                training::learner_activity* activity) override;

  std::vector<float> weights() const override {
    std::vector<float> w(parameters().begin(), parameters().end());
    w.insert(w.end(), block_.begin(), block_.end());
    return w;
  }

  std::vector<float> values(std::span<const float> observations) const override {
    std::vector<float> storage;
    const auto inputs = detail::network_inputs(spec_, observations, storage);
    const auto rows = inputs.size() / spec_.input_dim();
    auto in = normalized(inputs);
    return recurrent_ ? first_step_values(in, rows) : critic(in, rows);
  }

  training::learner_state state() const override {
    training::learner_state st;
    st.parameters.assign(parameters().begin(), parameters().end());
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
    const auto n = parameters().size();
    if (st.parameters.size() != n || st.adam_m.size() != n || st.adam_v.size() != n) {
      throw usage_error(fmt::format("ppo_learner: {} parameters and {}/{} Adam moments given, the network has {}",
                                    st.parameters.size(), st.adam_m.size(), st.adam_v.size(), n));
    }
    std::copy(st.parameters.begin(), st.parameters.end(), parameters().begin());
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
  /// The network's flat parameters.
  std::span<float> parameters() noexcept { return recurrent_ ? recurrent_->parameters() : net_->parameters(); }
  std::span<const float> parameters() const noexcept {
    return recurrent_ ? recurrent_->parameters() : net_->parameters();
  }

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
    for (std::size_t at = 0; at < rows; at += net_->max_rows()) {
      const auto n = std::min(net_->max_rows(), rows - at);
      net_->forward(in.data() + at * D, n);
      std::copy_n(net_->values().begin(), n, out.begin() + static_cast<std::ptrdiff_t>(at));
    }
    return out;
  }

  /// The recurrent critic's values of `rows` normalised rows, each one
  /// step on from the state (h, c) = `states` [rows][2H]; from a zero
  /// state where `states` is empty (as an episode's first observation).
  std::vector<float> one_step_values(std::span<const float> in, std::size_t rows, std::span<const float> h,
                                     std::span<const float> c) const;
  std::vector<float> first_step_values(std::span<const float> in, std::size_t rows) const {
    const std::vector<float> zeros(rows * spec_.lstm, 0.0f);
    return one_step_values(in, rows, zeros, zeros);
  }

  /// The learner's values of each row's last observation (`bootstrap`) and
  /// of the truncated steps' final observations (`final_values`), from the
  /// normalised observations `all_obs` [R][T + 1][D].
  void values_for_gae(const training::rollout_segment& seg, const std::vector<float>& all_obs,
                      std::vector<float>& bootstrap, std::vector<float>& final_values);

  /// Row `r`'s initial LSTM state in `seg`, as h [H] and c [H].
  void initial_state(const training::rollout_segment& seg, std::size_t r, float* h, float* c) const {
    const auto H = spec_.lstm;
    const float* state = seg.initial_states.data() + r * 2 * H;
    std::copy_n(state, H, h);
    std::copy_n(state + H, H, c);
  }

  /// The gathered minibatch's buffers sized for `n` steps.
  void size_minibatch(const training::rollout_segment& seg, std::size_t n);
  /// Copies step `i` of `seg` (its observation from `all_obs`, its actions,
  /// the acting policy's log probability and value, its advantage and
  /// return) into slot `at` of the gathered minibatch.
  void gather_step(const training::rollout_segment& seg, const std::vector<float>& all_obs,
                   const std::vector<float>& advantages, const std::vector<float>& returns, std::size_t i,
                   std::size_t at);
  /// The first `n` gathered slots as a minibatch.
  [[nodiscard]] fused::ppo_minibatch gathered(std::size_t n) const;

  /// One minibatch step of the MLP network on the steps `steps`.
  fused::ppo_step_stats mlp_step(const training::rollout_segment& seg, const std::vector<float>& all_obs,
                                 const std::vector<float>& advantages, const std::vector<float>& returns,
                                 std::span<const std::size_t> steps, double lr);
  /// One minibatch step of the recurrent network on the whole rows `rows`,
  /// each unrolled from its initial state (keep_ says where episodes start).
  fused::ppo_step_stats recurrent_step(const training::rollout_segment& seg, const std::vector<float>& all_obs,
                                       const std::vector<float>& advantages, const std::vector<float>& returns,
                                       std::span<const std::size_t> rows, double lr);

  network_spec spec_;
  ppo_config config_;
  std::uint64_t total_steps_;
  std::uint64_t rng_;
  // The network: the MLP one, or with spec.lstm the recurrent one; mutable:
  // critic() and one_step_values() run forward passes.
  mutable std::optional<fused::actor_critic> net_;
  mutable std::optional<fused::recurrent_actor_critic> recurrent_;
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
  // Recurrent: keep_ [R][T + 1], 0 where a step starts an episode (never
  // step 0: a row's initial state is the acting policy's); an unroll's
  // time-major keep and initial states.
  std::vector<float> keep_, mb_keep_, mb_h0_, mb_c0_;
  // The gathered steps' action masks ([n][mask_dim_]; none where the env
  // masks nothing or masks are off).
  std::vector<std::uint8_t> mb_mask_;
  std::size_t mask_dim_ = 0;
  std::vector<std::size_t> mb_steps_;  // a minibatch's acted steps
};

training::update_stats fused_ppo::update(const training::rollout_segment& seg, std::uint64_t version,
                                         training::learner_activity* activity) {
  const auto& c = config_;
  const auto R = seg.rows, T = seg.horizon, N = R * T, D = spec_.input_dim();
  const auto started = std::chrono::steady_clock::now();
  training::update_stats out;
  detail::policy_lag(seg, version, out);
  if (seg.state_dim != spec_.state_dim() || seg.initial_states.size() != seg.rows * seg.state_dim) {
    throw usage_error(fmt::format("ppo_learner: the segment carries {} floats of state per row, the network {}",
                                  seg.state_dim, spec_.state_dim()));
  }
  // The masks the actions were drawn under, where the env masks.
  mask_dim_ = c.action_masks ? seg.mask_dim : 0;
  if (mask_dim_ != 0 && mask_dim_ != spec_.logits_dim()) {
    throw usage_error(fmt::format("ppo_learner: masks of {} bytes per step, the network has {} logits", mask_dim_,
                                  spec_.logits_dim()));
  }
  // The acted steps (all of a single-agent segment's) are the samples; too
  // few for a minibatch (an advantage's std needs 2) train nothing.
  const auto samples = detail::acted_steps(seg);
  const bool recurrent = recurrent_.has_value();
  if (recurrent && (samples.size() != N || mask_dim_ != 0)) {
    // check_ppo_env() (ppo.cpp) refuses both before a run.
    throw usage_error(fmt::format("ppo_learner: a recurrent network trains every step of whole rows, without masks; "
                                  "this segment of {} rows has steps not acted or masks",
                                  seg.rows));
  }
  const auto S = samples.size() < 2 ? 0 : samples.size();
  const auto mb = std::min(std::max<std::size_t>(c.minibatch_size, 1), std::max<std::size_t>(S, 1));
  // A recurrent network trains on whole rows (truncated back-propagation
  // through the horizon): minibatches of mb / T rows, shuffled by row.
  const std::size_t units = recurrent ? R : S;
  const std::size_t per_batch = recurrent ? std::max<std::size_t>(mb / T, 1) : mb;
  if (recurrent) {
    recurrent_->reserve(std::max(R, per_batch), T + 1);
    if (work_.advantages.size() < per_batch * T) work_ = fused::ppo_workspace(per_batch * T);
    keep_.assign(R * (T + 1), 1.0f);
    for (std::size_t r = 0; r < R; ++r) {
      for (std::size_t t = 1; t <= T; ++t) {
        const auto i = r * T + t - 1;
        if (seg.terminated[i] != 0 || seg.truncated[i] != 0) keep_[r * (T + 1) + t] = 0.0f;
      }
    }
  }
  // Normalised with the moments the acting policy had (the block published
  // with the weights it acted with, when the lag is 0).
  // The network's inputs (one-hot elements expanded), normalised.
  std::vector<float> encoded;
  const auto inputs = detail::network_inputs(spec_, seg.observations, encoded);
  const auto all_obs = normalized(inputs);  // [R][T + 1][D]
  std::vector<float> bootstrap, final_values;
  values_for_gae(seg, all_obs, bootstrap, final_values);
  std::vector<float> rewards = seg.rewards;
  if (scaler_) scaler_->scale(rewards, seg.terminated, seg.truncated, seg.rows, seg.horizon);
  for (std::size_t j = 0; j < seg.truncated_steps.size(); ++j) {
    rewards[seg.truncated_steps[j]] += static_cast<float>(c.gamma) * final_values[j];
  }
  std::vector<float> advantages(N), returns(N);
  detail::gae(seg, rewards, bootstrap, c.gamma, c.gae_lambda, advantages, returns);

  const double lr = detail::annealed_rate(c, env_steps_, total_steps_);
  out.learning_rate = lr;

  std::vector<std::size_t> order(units);
  const auto batches_per_epoch = static_cast<std::uint64_t>(units / per_batch);
  if (activity != nullptr) activity->begin(updates_ + 1, c.epochs * batches_per_epoch);
  bool stopping = false;  // a stop ends the update at a minibatch boundary (learner_activity)
  for (std::size_t epoch = 0; epoch < c.epochs && !stopping; ++epoch) {
    detail::shuffle(order, rng_);
    const bool last_epoch = epoch + 1 == c.epochs;
    double kl_sum = 0, clip_sum = 0, pl_sum = 0, vl_sum = 0, ent_sum = 0;
    std::size_t batches = 0;
    for (std::size_t start = 0; start + per_batch <= units; start += per_batch) {
      const std::span<const std::size_t> chosen(order.data() + start, per_batch);
      mb_steps_.resize(per_batch);
      if (!recurrent) {
        for (std::size_t j = 0; j < per_batch; ++j) mb_steps_[j] = samples[chosen[j]];
      }
      const auto st = recurrent ? recurrent_step(seg, all_obs, advantages, returns, chosen, lr)
                                : mlp_step(seg, all_obs, advantages, returns, mb_steps_, lr);
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

void fused_ppo::values_for_gae(const training::rollout_segment& seg, const std::vector<float>& all_obs,
                               std::vector<float>& bootstrap, std::vector<float>& final_values) {
  const auto R = seg.rows, T = seg.horizon, D = spec_.input_dim(), k = seg.truncated_steps.size();
  std::vector<float> encoded_final;
  const auto final_inputs = detail::network_inputs(spec_, seg.truncated_observations, encoded_final);
  if (!recurrent_) {
    std::vector<float> last(R * D);
    for (std::size_t r = 0; r < R; ++r) {
      std::copy_n(all_obs.begin() + static_cast<std::ptrdiff_t>((r * (T + 1) + T) * D), D,
                  last.begin() + static_cast<std::ptrdiff_t>(r * D));
    }
    bootstrap = critic(last, R);
    if (k > 0) final_values = critic(normalized(final_inputs), k);
    return;
  }
  // Every row unrolled over all T + 1 observations from its initial state,
  // time-major; the bootstrap value is the critic's at step T.
  const std::size_t S = T + 1, H = spec_.lstm;
  std::vector<float> x(S * R * D), keep(S * R), h0(R * H), c0(R * H);
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t t = 0; t < S; ++t) {
      std::copy_n(all_obs.begin() + static_cast<std::ptrdiff_t>((r * S + t) * D), D,
                  x.begin() + static_cast<std::ptrdiff_t>((t * R + r) * D));
      keep[t * R + r] = keep_[r * S + t];
    }
    initial_state(seg, r, h0.data() + r * H, c0.data() + r * H);
  }
  recurrent_->forward(x.data(), keep.data(), h0.data(), c0.data(), R, S, false);
  const auto values = recurrent_->heads().values();
  bootstrap.assign(values.begin() + static_cast<std::ptrdiff_t>(T * R), values.begin() + static_cast<std::ptrdiff_t>(S * R));
  if (k == 0) return;
  // A truncated step's final observation continues its episode: one more
  // step from the state after that step.
  std::vector<float> h(k * H), cell(k * H);
  const auto hs = recurrent_->features(), cs = recurrent_->cells();
  for (std::size_t j = 0; j < k; ++j) {
    const auto i = seg.truncated_steps[j];
    const auto at = ((i % T) * R + i / T) * H;
    std::copy_n(hs.begin() + static_cast<std::ptrdiff_t>(at), H, h.begin() + static_cast<std::ptrdiff_t>(j * H));
    std::copy_n(cs.begin() + static_cast<std::ptrdiff_t>(at), H, cell.begin() + static_cast<std::ptrdiff_t>(j * H));
  }
  final_values = one_step_values(normalized(final_inputs), k, h, cell);
}

std::vector<float> fused_ppo::one_step_values(std::span<const float> in, std::size_t rows, std::span<const float> h,
                                              std::span<const float> c) const {
  auto& net = *recurrent_;
  const auto D = spec_.input_dim(), H = spec_.lstm, most = net.max_rows();
  std::vector<float> out(rows);
  const std::vector<float> keep(most, 1.0f);
  for (std::size_t at = 0; at < rows; at += most) {
    const auto n = std::min(most, rows - at);
    net.forward(in.data() + at * D, keep.data(), h.data() + at * H, c.data() + at * H, n, 1, false);
    std::copy_n(net.heads().values().begin(), n, out.begin() + static_cast<std::ptrdiff_t>(at));
  }
  return out;
}

void fused_ppo::size_minibatch(const training::rollout_segment& seg, std::size_t n) {
  mb_obs_.resize(n * spec_.input_dim());
  mb_mask_.resize(n * mask_dim_);
  mb_disc_.resize(n * seg.discrete_dim);
  mb_cont_.resize(n * seg.continuous_dim);
  for (auto* v : {&mb_logp_, &mb_val_, &mb_adv_, &mb_ret_}) v->resize(n);
}

void fused_ppo::gather_step(const training::rollout_segment& seg, const std::vector<float>& all_obs,
                            const std::vector<float>& advantages, const std::vector<float>& returns, std::size_t i,
                            std::size_t at) {
  const auto T = seg.horizon, D = spec_.input_dim(), nd = seg.discrete_dim, nc = seg.continuous_dim;
  const auto md = mask_dim_;
  const auto row = (i / T) * (T + 1) + i % T;  // step i's observation in all_obs
  std::copy_n(all_obs.begin() + static_cast<std::ptrdiff_t>(row * D), D, mb_obs_.begin() + static_cast<std::ptrdiff_t>(at * D));
  std::copy_n(seg.discrete_actions.begin() + static_cast<std::ptrdiff_t>(i * nd), nd,
              mb_disc_.begin() + static_cast<std::ptrdiff_t>(at * nd));
  std::copy_n(seg.continuous_actions.begin() + static_cast<std::ptrdiff_t>(i * nc), nc,
              mb_cont_.begin() + static_cast<std::ptrdiff_t>(at * nc));
  std::copy_n(seg.action_masks.begin() + static_cast<std::ptrdiff_t>(i * md), md,
              mb_mask_.begin() + static_cast<std::ptrdiff_t>(at * md));
  mb_logp_[at] = seg.log_probs[i];
  mb_val_[at] = seg.values[i];
  mb_adv_[at] = advantages[i];
  mb_ret_[at] = returns[i];
}

fused::ppo_minibatch fused_ppo::gathered(std::size_t n) const {
  return {.rows = n,
          .observations = mb_obs_,
          .discrete_actions = mb_disc_,
          .continuous_actions = mb_cont_,
          .log_probs = mb_logp_,
          .values = mb_val_,
          .advantages = mb_adv_,
          .returns = mb_ret_,
          .action_masks = mb_mask_};
}

fused::ppo_step_stats fused_ppo::mlp_step(const training::rollout_segment& seg, const std::vector<float>& all_obs,
                                          const std::vector<float>& advantages, const std::vector<float>& returns,
                                          std::span<const std::size_t> steps, double lr) {
  size_minibatch(seg, steps.size());
  for (std::size_t j = 0; j < steps.size(); ++j) gather_step(seg, all_obs, advantages, returns, steps[j], j);
  return fused::ppo_step(*net_, adam_, work_, gathered(steps.size()), config_, lr);
}

fused::ppo_step_stats fused_ppo::recurrent_step(const training::rollout_segment& seg,
                                                const std::vector<float>& all_obs,
                                                const std::vector<float>& advantages,
                                                const std::vector<float>& returns, std::span<const std::size_t> rows,
                                                double lr) {
  const auto T = seg.horizon, B = rows.size(), H = spec_.lstm, n = B * T;
  size_minibatch(seg, n);
  mb_keep_.resize(n);
  mb_h0_.resize(B * H);
  mb_c0_.resize(B * H);
  // Time-major: step t of the minibatch's row j at t × B + j.
  for (std::size_t j = 0; j < B; ++j) {
    const auto r = rows[j];
    for (std::size_t t = 0; t < T; ++t) {
      gather_step(seg, all_obs, advantages, returns, r * T + t, t * B + j);
      mb_keep_[t * B + j] = keep_[r * (T + 1) + t];
    }
    initial_state(seg, r, mb_h0_.data() + j * H, mb_c0_.data() + j * H);
  }
  const fused::recurrent_ppo_minibatch batch{
      .rows = B, .steps = T, .keep = mb_keep_, .h0 = mb_h0_, .c0 = mb_c0_, .steps_of = gathered(n)};
  return fused::recurrent_ppo_step(*recurrent_, adam_, work_, batch, config_, lr);
}

}  // namespace

namespace detail {

std::unique_ptr<ppo_learner::backend> make_fused_ppo(const network_spec& spec, const ppo_config& config,
                                                     std::uint64_t seed, std::uint64_t total_steps) {
  return std::make_unique<fused_ppo>(spec, config, seed, total_steps);
}

}  // namespace detail

}  // namespace coral::learners
