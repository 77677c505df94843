#include "coral/learners/ppo_learner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "actor_critic.hpp"
#include "adam.hpp"
#include "learner_backends.hpp"
#include "ppo_shared.hpp"
#include "coral/core/error.hpp"
#include "coral/core/rng.hpp"
#include "coral/training/reward_scaler.hpp"
#include "coral/training/running_moments.hpp"

namespace coral::learners {

struct torch_ppo_state {
  torch_ppo_state(const network_spec& s, const ppo_config& c, std::uint64_t seed, std::uint64_t total)
      : spec(s), config(c), total_steps(total), rng(seed ^ 0x5EEDULL) {
    // The initial weights depend on the seed alone: torch's generator is
    // used for the initialisation only (sampling and shuffling use ours).
    torch::manual_seed(seed);
    net = detail::actor_critic(s);
    adam = std::make_unique<detail::flat_adam>(net->ordered(), c.adam_epsilon);
    if (s.normalize_observations) block = training::normalizer_block(moments);
  }

  /// `in` (rows of input_dim) normalised with the published block, or `in` itself.
  torch::Tensor normalized(std::span<const float> in, std::int64_t rows) const {
    const auto D = static_cast<std::int64_t>(spec.input_dim());
    auto raw = torch::from_blob(const_cast<float*>(in.data()), {rows, D}, torch::kFloat32);
    if (block.empty()) return raw;
    auto out = torch::empty({rows, D}, torch::kFloat32);
    float* o = out.data_ptr<float>();
    for (std::int64_t r = 0; r < rows; ++r) training::normalize_observation(block, in.data() + r * D, o + r * D);
    return out;
  }

  network_spec spec;
  ppo_config config;
  std::uint64_t total_steps;
  detail::actor_critic net{nullptr};
  std::unique_ptr<detail::flat_adam> adam;
  std::uint64_t updates = 0;
  std::uint64_t env_steps = 0;
  std::uint64_t rng;
  training::running_moments moments{spec.normalize_observations ? spec.input_dim() : 0};
  std::vector<float> block;  // normalizer_block(moments), as published; empty without obs norm
  std::optional<training::reward_scaler> scaler = config.scale_rewards ? std::optional<training::reward_scaler>(config.gamma) : std::nullopt;
};

/// The torch twin's updates (learner_backends.hpp).
class torch_ppo final : public ppo_learner::backend {
 public:
  torch_ppo(const network_spec& spec, const ppo_config& config, std::uint64_t seed, std::uint64_t total_steps) : impl_(std::make_unique<torch_ppo_state>(spec, config, seed, total_steps)) {}
  training::update_stats update(const training::rollout_segment& segment, std::uint64_t version,
                                training::learner_activity* activity) override;
  std::vector<float> weights() const override;
  std::vector<float> values(std::span<const float> observations) const override;
  training::learner_state state() const override;
  void restore(const training::learner_state& s) override;
  std::uint64_t updates() const noexcept override;
  std::uint64_t env_steps() const noexcept override;
  const network_spec& spec() const noexcept override;
 private:
  std::unique_ptr<torch_ppo_state> impl_;
};


std::uint64_t torch_ppo::updates() const noexcept { return impl_->updates; }
std::uint64_t torch_ppo::env_steps() const noexcept { return impl_->env_steps; }
const network_spec& torch_ppo::spec() const noexcept { return impl_->spec; }
std::vector<float> torch_ppo::weights() const {
  auto w = detail::flatten(*impl_->net);
  w.insert(w.end(), impl_->block.begin(), impl_->block.end());
  return w;
}

std::vector<float> torch_ppo::values(std::span<const float> observations) const {
  auto& s = *impl_;
  std::vector<float> storage;
  const auto inputs = detail::network_inputs(s.spec, observations, storage);
  torch::NoGradGuard no_grad;
  const auto rows = static_cast<std::int64_t>(inputs.size() / s.spec.input_dim());
  auto in = s.normalized(inputs, rows);
  if (s.spec.lstm > 0) {  // each observation as an episode's first: from a zero state
    const auto zeros = torch::zeros({rows, static_cast<std::int64_t>(s.spec.lstm)}, torch::kFloat32);
    in = s.net->step(in, zeros, zeros).first;
  }
  const auto v = s.net->value(in).contiguous();
  return {v.data_ptr<float>(), v.data_ptr<float>() + v.numel()};
}

training::update_stats torch_ppo::update(const training::rollout_segment& seg, std::uint64_t version,
                                           training::learner_activity* activity) {
  auto& s = *impl_;
  const auto& c = s.config;
  const auto R = static_cast<std::int64_t>(seg.rows);
  const auto T = static_cast<std::int64_t>(seg.horizon);
  const auto N = R * T;
  const auto D = static_cast<std::int64_t>(s.spec.input_dim());
  training::update_stats out;
  const auto started = std::chrono::steady_clock::now();

  detail::policy_lag(seg, version, out);

  const bool recurrent = s.spec.lstm > 0;
  const auto H = static_cast<std::int64_t>(s.spec.lstm);
  if (seg.state_dim != s.spec.state_dim() || seg.initial_states.size() != seg.rows * seg.state_dim) {
    throw usage_error(fmt::format("ppo_learner: the segment carries {} floats of state per row, the network {}",
                                  seg.state_dim, s.spec.state_dim()));
  }
  // Normalised with the moments the acting policy had (the block published
  // with the weights it acted with, when the lag is 0).
  // The network's inputs (one-hot elements expanded), normalised.
  std::vector<float> encoded;
  const auto inputs = detail::network_inputs(s.spec, seg.observations, encoded);
  const auto all_obs = s.normalized(inputs, R * (T + 1)).reshape({R, T + 1, D});
  torch::Tensor obs = all_obs.narrow(1, 0, T).reshape({N, D}).clone();
  // A recurrent network's unroll: each row from its state at step 0, zeroed
  // before every step that starts an episode (step t > 0 after an ended t − 1;
  // step 0's state already is the acting policy's, zeros or not).
  torch::Tensor resets, h0, c0;
  if (recurrent) {
    resets = torch::zeros({R, T + 1}, torch::kFloat32);
    float* rp = resets.data_ptr<float>();
    for (std::int64_t r = 0; r < R; ++r) {
      for (std::int64_t t = 1; t <= T; ++t) {
        const auto i = static_cast<std::size_t>(r * T + t - 1);
        rp[r * (T + 1) + t] = (seg.terminated[i] != 0 || seg.truncated[i] != 0) ? 1.0f : 0.0f;
      }
    }
    const auto states = torch::from_blob(const_cast<float*>(seg.initial_states.data()), {R, 2 * H}, torch::kFloat32);
    h0 = states.narrow(1, 0, H).clone();
    c0 = states.narrow(1, H, H).clone();
  }
  // GAE on the CPU, per row, from the acting policy's values and the
  // learner's values of the bootstrap and truncation observations.
  std::vector<float> advantages(static_cast<std::size_t>(N));
  std::vector<float> returns(static_cast<std::size_t>(N));
  {
    torch::NoGradGuard no_grad;
    torch::Tensor feats, cells;  // recurrent: the unroll over all T + 1 observations
    if (recurrent) std::tie(feats, cells) = s.net->unroll(all_obs, resets, h0, c0);
    const auto last =
        (recurrent ? s.net->value(feats.select(1, T)) : s.net->value(all_obs.select(1, T).contiguous())).contiguous();
    std::vector<float> bootstrap(last.data_ptr<float>(), last.data_ptr<float>() + R);
    std::vector<float> rewards = seg.rewards;
    if (s.scaler) s.scaler->scale(rewards, seg.terminated, seg.truncated, seg.rows, seg.horizon);
    if (!seg.truncated_steps.empty()) {
      const auto k = static_cast<std::int64_t>(seg.truncated_steps.size());
      std::vector<float> encoded_final;
      auto final_obs = s.normalized(detail::network_inputs(s.spec, seg.truncated_observations, encoded_final), k);
      torch::Tensor fv;
      if (recurrent) {
        // The final observation continues the episode's state: one more step
        // from the state after the truncated step.
        std::vector<std::int64_t> at(seg.truncated_steps.begin(), seg.truncated_steps.end());
        const auto idx = torch::from_blob(at.data(), {k}, torch::kInt64);
        const auto h = feats.narrow(1, 0, T).reshape({N, H}).index_select(0, idx);
        const auto c = cells.narrow(1, 0, T).reshape({N, H}).index_select(0, idx);
        fv = s.net->value(s.net->step(final_obs, h, c).first).contiguous();
      } else {
        fv = s.net->value(final_obs).contiguous();
      }
      for (std::int64_t j = 0; j < k; ++j) {
        rewards[seg.truncated_steps[static_cast<std::size_t>(j)]] +=
            static_cast<float>(c.gamma) * fv.data_ptr<float>()[j];
      }
    }
    detail::gae(seg, rewards, bootstrap, c.gamma, c.gae_lambda, advantages, returns);
  }
  const auto adv_all = torch::from_blob(advantages.data(), {N}, torch::kFloat32);
  const auto ret_all = torch::from_blob(returns.data(), {N}, torch::kFloat32);
  const auto logp_all = torch::from_blob(const_cast<float*>(seg.log_probs.data()), {N}, torch::kFloat32);
  const auto val_all = torch::from_blob(const_cast<float*>(seg.values.data()), {N}, torch::kFloat32);
  torch::Tensor disc_all = seg.discrete_dim > 0
                               ? torch::from_blob(const_cast<std::int32_t*>(seg.discrete_actions.data()),
                                                  {N, static_cast<std::int64_t>(seg.discrete_dim)}, torch::kInt32)
                                     .to(torch::kInt64)
                               : torch::zeros({N, 0}, torch::kInt64);
  torch::Tensor cont_all = seg.continuous_dim > 0
                               ? torch::from_blob(const_cast<float*>(seg.continuous_actions.data()),
                                                  {N, static_cast<std::int64_t>(seg.continuous_dim)}, torch::kFloat32)
                               : torch::zeros({N, 0}, torch::kFloat32);

  // The masks the actions were drawn under, where the env masks.
  const auto md = static_cast<std::int64_t>(c.action_masks ? seg.mask_dim : 0);
  if (md != 0 && md != static_cast<std::int64_t>(s.spec.logits_dim())) {
    throw usage_error(fmt::format("ppo_learner: masks of {} bytes per step, the network has {} logits", md,
                                  s.spec.logits_dim()));
  }
  torch::Tensor mask_all;
  if (md != 0) {
    mask_all = torch::from_blob(const_cast<std::uint8_t*>(seg.action_masks.data()), {N, md}, torch::kUInt8)
                   .to(torch::kBool);
  }

  const double lr = detail::annealed_rate(c, s.env_steps, s.total_steps);
  out.learning_rate = lr;

  // The acted steps (all of a single-agent segment's) are the samples; too
  // few for a minibatch (an advantage's std needs 2) train nothing.
  const auto samples = detail::acted_steps(seg);
  const auto S = static_cast<std::int64_t>(samples.size() < 2 ? 0 : samples.size());
  const auto mb = std::min<std::int64_t>(static_cast<std::int64_t>(std::max<std::size_t>(c.minibatch_size, 1)),
                                         std::max<std::int64_t>(S, 1));
  // A recurrent network trains on whole rows (truncated back-propagation
  // through the horizon): minibatches of mb / T rows, shuffled by row.
  const std::int64_t units = recurrent ? R : S;
  const std::int64_t per_batch = recurrent ? std::max<std::int64_t>(mb / T, 1) : mb;
  std::vector<std::int64_t> order(static_cast<std::size_t>(units));
  std::vector<std::int64_t> steps_of(recurrent ? static_cast<std::size_t>(per_batch * T) : 0);
  s.net->train();
  const auto batches_per_epoch = static_cast<std::uint64_t>(units / per_batch);
  if (activity != nullptr) activity->begin(s.updates + 1, c.epochs * batches_per_epoch);
  bool stopping = false;  // a stop ends the update at a minibatch boundary (learner_activity)
  for (std::size_t epoch = 0; epoch < c.epochs && !stopping; ++epoch) {
    detail::shuffle(order, s.rng);
    if (!recurrent) {
      for (auto& o : order) o = static_cast<std::int64_t>(samples[static_cast<std::size_t>(o)]);
    }
    const bool last_epoch = epoch + 1 == c.epochs;
    double kl_sum = 0, clip_sum = 0, pl_sum = 0, vl_sum = 0, ent_sum = 0;
    std::int64_t batches = 0;
    for (std::int64_t start = 0; start + per_batch <= units; start += per_batch) {
      torch::Tensor idx, x;
      if (recurrent) {
        // The minibatch's rows, unrolled from their initial states; idx: their steps, row-major.
        const auto rows = torch::from_blob(order.data() + start, {per_batch}, torch::kInt64);
        for (std::int64_t j = 0; j < per_batch; ++j) {
          for (std::int64_t t = 0; t < T; ++t) steps_of[static_cast<std::size_t>(j * T + t)] = order[static_cast<std::size_t>(start + j)] * T + t;
        }
        idx = torch::from_blob(steps_of.data(), {per_batch * T}, torch::kInt64);
        x = s.net->unroll(all_obs.index_select(0, rows).narrow(1, 0, T), resets.index_select(0, rows).narrow(1, 0, T),
                          h0.index_select(0, rows), c0.index_select(0, rows))
                .first.reshape({per_batch * T, H});
      } else {
        idx = torch::from_blob(order.data() + start, {mb}, torch::kInt64);
        x = obs.index_select(0, idx);
      }
      auto out_actor = s.net->actor_out(x);
      auto [logp, entropy] = s.net->log_prob_entropy(out_actor, disc_all.index_select(0, idx),
                                                     cont_all.index_select(0, idx),
                                                     md != 0 ? mask_all.index_select(0, idx) : torch::Tensor());
      auto value = s.net->value(x);
      auto adv = adv_all.index_select(0, idx);
      if (c.normalize_advantages) adv = (adv - adv.mean()) / (adv.std() + 1e-8);
      auto log_ratio = logp - logp_all.index_select(0, idx);
      auto ratio = log_ratio.exp();
      auto pg = torch::max(-adv * ratio, -adv * torch::clamp(ratio, 1.0 - c.clip, 1.0 + c.clip)).mean();
      auto ret = ret_all.index_select(0, idx);
      torch::Tensor vloss;
      if (c.clip_value_loss) {
        auto old_v = val_all.index_select(0, idx);
        auto clipped = old_v + torch::clamp(value - old_v, -c.clip, c.clip);
        vloss = 0.5 * torch::max((value - ret).pow(2), (clipped - ret).pow(2)).mean();
      } else {
        vloss = 0.5 * (value - ret).pow(2).mean();
      }
      auto ent = entropy.mean();
      auto loss = pg - c.entropy_coef * ent + c.value_coef * vloss;
      s.net->zero_grad();
      loss.backward();
      if (c.max_grad_norm > 0) detail::clip_grad_norm(s.net->ordered(), c.max_grad_norm);
      s.adam->step(s.net->ordered(), lr);
      if (activity != nullptr && !activity->step()) {
        stopping = true;
        break;
      }
      if (last_epoch) {
        torch::NoGradGuard no_grad;
        kl_sum += ((ratio - 1) - log_ratio).mean().item<double>();
        clip_sum += ((ratio - 1.0).abs() > c.clip).to(torch::kFloat32).mean().item<double>();
        pl_sum += pg.item<double>();
        vl_sum += vloss.item<double>();
        ent_sum += ent.item<double>();
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
  s.net->eval();
  if (activity != nullptr) activity->end();
  if (!s.block.empty()) {
    // The observations acted on, the bootstrap ones left out (each is the
    // next segment's first).
    detail::for_each_acted_run(seg, [&](std::size_t first, std::size_t count) {
      s.moments.update(inputs.subspan(first * static_cast<std::size_t>(D), count * static_cast<std::size_t>(D)));
    });
    s.block = training::normalizer_block(s.moments);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ++s.updates;
  s.env_steps += seg.env_steps();
  return out;
}

training::learner_state torch_ppo::state() const {
  training::learner_state st;
  st.parameters = detail::flatten(*impl_->net);  // the normaliser's block is derived from observation_moments
  impl_->adam->save(st.adam_m, st.adam_v);
  st.adam_steps = impl_->adam->steps;
  st.updates = impl_->updates;
  st.env_steps = impl_->env_steps;
  st.rng = impl_->rng;
  if (!impl_->block.empty()) st.observation_moments = impl_->moments.save();
  if (impl_->scaler) st.reward_scaling = impl_->scaler->save();
  return st;
}

void torch_ppo::restore(const training::learner_state& st) {
  auto& s = *impl_;
  detail::check_ppo_state(st, !s.block.empty(), s.scaler.has_value());
  detail::load(*s.net, st.parameters);
  if (!s.block.empty()) {
    s.moments.load(st.observation_moments);
    s.block = training::normalizer_block(s.moments);
  }
  if (s.scaler) s.scaler->load(st.reward_scaling);
  s.adam->load(st.adam_m, st.adam_v, st.adam_steps);
  s.updates = st.updates;
  s.env_steps = st.env_steps;
  s.rng = st.rng;
}

namespace detail {

std::unique_ptr<ppo_learner::backend> make_torch_ppo(const network_spec& spec, const ppo_config& config, std::uint64_t seed, std::uint64_t total_steps) {
  return std::make_unique<torch_ppo>(spec, config, seed, total_steps);
}

}  // namespace detail

}  // namespace coral::learners
